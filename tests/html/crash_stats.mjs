// The crash-stats page in a real browser (Debian's Chromium driven by playwright-core): from
// the top signatures, follow a signature to its page, then one of its crashes, and read the
// crash's cause. Keeps a screenshot of each page.
//
// usage: node crash_stats.mjs BASE_URL SIGNATURE_TEXT CAUSE_TEXT OUT_PREFIX
import { chromium } from "playwright-core";

const [base, signature, cause, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node crash_stats.mjs BASE_URL SIGNATURE_TEXT CAUSE_TEXT OUT_PREFIX");
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const scripts = [];
  page.on("request", (r) => r.resourceType() === "script" && scripts.push(r.url()));

  await page.goto(`${base}/?days=7`);
  await page.locator("h1", { hasText: "Top signatures" }).waitFor();
  await page.screenshot({ path: `${out}-top.png`, fullPage: true });

  // Follow the signature from the table.
  await page.locator("table.signatures a", { hasText: signature }).first().click();
  await page.waitForURL(/\/signature\?/);
  const heading = await page.locator("h1").innerText();
  if (!heading.includes(signature)) throw new Error(`signature page is for ${heading}`);
  await page.locator("table.stack").waitFor();
  await page.screenshot({ path: `${out}-signature.png`, fullPage: true });

  // Then one of its crashes.
  await page.locator("table.crashes a").first().click();
  await page.waitForURL(/\/crash\/[0-9a-f]{64}$/);
  const found = await page.locator("#cause").innerText();
  if (!found.includes(cause)) throw new Error(`the cause reads: ${found}`);
  const report = await page.locator("pre.report").innerText();
  if (!report.includes(signature)) throw new Error("the analyze report is not on the page");
  await page.screenshot({ path: `${out}.png`, fullPage: true });

  if (scripts.length) throw new Error(`the page loaded scripts: ${scripts}`);
  console.log(`crash-stats page ok: ${signature} -> ${page.url()}; cause: ${found.split("\n").find((line) => line.includes(cause))}`);
} finally {
  await browser.close();
}
