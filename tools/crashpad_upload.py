#!/usr/bin/env python3
"""Send minidumps to a crash collector the way Crashpad's handler does (stdlib only).

The request is what Crashpad's CrashReportUploadThread sends through HTTPMultipartBuilder:
a POST of multipart/form-data whose boundary is "---MultipartBoundary-" + 32 random
alphanumerics + "---", one part per annotation (Content-Disposition: form-data; name="KEY",
in key order), then the dump as the "upload_file_minidump" part (filename, Content-Type:
application/octet-stream), then the closing boundary; the whole body gzip-compressed with
Content-Encoding: gzip, sent with Transfer-Encoding: chunked on a new connection. The
answer's body is the crash id Crashpad records for the report.

    tools/crashpad_upload.py http://127.0.0.1:8900/submit crash.dmp --product app --version 1.2
    tools/crashpad_upload.py URL DUMP... --copies 100 --jobs 8 --json   (load testing)

--copies N sends N different dumps per file (bytes appended after the last stream, which no
reader looks at), so each is a new crash. Output: one line per upload (JSON with --json);
exit status 1 when any upload was refused.
"""

import argparse
import gzip
import http.client
import json
import os
import random
import string
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

BOUNDARY_CHARS = string.digits + string.ascii_uppercase + string.ascii_lowercase


def boundary():
    return "---MultipartBoundary-" + "".join(random.choice(BOUNDARY_CHARS) for _ in range(32)) + "---"


def mime_field(name):
    """Crashpad's EncodeMIMEField: CR, LF, quote and percent as %xx."""
    return "".join("%%%02x" % ord(c) if c in '\r\n"%' else c for c in name)


def body(annotations, dump, filename, gzipped=True):
    """The request body and its headers, as Crashpad's HTTPMultipartBuilder makes them."""
    b = boundary()
    parts = []
    for key in sorted(annotations):
        parts.append(
            ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n"
             % (b, mime_field(key), annotations[key])).encode())
    parts.append(
        ("--%s\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; "
         "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n"
         % (b, mime_field(filename))).encode())
    parts.append(dump)
    parts.append(b"\r\n")
    parts.append(("--%s--\r\n" % b).encode())
    data = b"".join(parts)
    headers = {"Content-Type": "multipart/form-data; boundary=%s" % b}
    if gzipped:
        data = gzip.compress(data, compresslevel=6)
        headers["Content-Encoding"] = "gzip"
    return data, headers


def chunks(data, size=16384):
    for i in range(0, len(data), size):
        yield data[i:i + size]


def send(url, data, headers, timeout=60.0):
    """One POST on its own connection: (status, answer text, seconds)."""
    u = urllib.parse.urlsplit(url)
    conn_class = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_class(u.hostname, u.port, timeout=timeout)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    start = time.monotonic()
    try:
        conn.putrequest("POST", path)
        conn.putheader("User-Agent", "Crashpad/0.8.0")
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for c in chunks(data):
            conn.send(b"%x\r\n%s\r\n" % (len(c), c))
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace").strip()
        return resp.status, text, time.monotonic() - start
    except OSError as e:
        return 0, "connection failed: %s" % e, time.monotonic() - start
    finally:
        conn.close()


def prepare(args):
    """Every request to send: (file, copy, body, headers), built before any is sent."""
    annotations = {k: v for k, v in (a.split("=", 1) for a in args.annotation)}
    if args.product:
        annotations["prod"] = args.product
    if args.version:
        annotations["ver"] = args.version
    if args.guid:
        annotations["guid"] = args.guid
    requests = []
    for path in args.dumps:
        with open(path, "rb") as f:
            original = f.read()
        name = os.path.basename(path)
        for copy in range(args.copies):
            dump = original if args.copies == 1 and not args.unique else original + b"copy %d %s" % (copy, args.salt.encode())
            data, headers = body(annotations, dump, name, gzipped=not args.no_gzip)
            requests.append((path, copy, data, headers))
    return requests


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="the collector's upload URL (…/submit, with ?token=… when it needs one)")
    p.add_argument("dumps", nargs="+", help="minidump files")
    p.add_argument("--product", help="the prod annotation")
    p.add_argument("--version", help="the ver annotation")
    p.add_argument("--guid", help="the guid annotation (the client's id)")
    p.add_argument("-a", "--annotation", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--no-gzip", action="store_true", help="send the body uncompressed")
    p.add_argument("--copies", type=int, default=1, help="different copies of each dump to send")
    p.add_argument("--unique", action="store_true", help="make even a single copy a new dump")
    p.add_argument("--salt", default="", help="text mixed into each copy (another run's copies differ)")
    p.add_argument("--jobs", type=int, default=1, help="uploads in flight at once")
    p.add_argument("--json", action="store_true", help="one JSON object per upload")
    args = p.parse_args()

    requests = prepare(args)
    lock = threading.Lock()
    failed = 0

    def one(req):
        nonlocal failed
        path, copy, data, headers = req
        sent_at = time.time()
        status, text, seconds = send(args.url, data, headers)
        with lock:
            if status != 200:
                failed += 1
            if args.json:
                print(json.dumps({"file": path, "copy": copy, "status": status, "answer": text,
                                  "sent_at": sent_at, "seconds": seconds}), flush=True)
            else:
                print("%d %s  %s" % (status, text, path), flush=True)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, requests))
    elapsed = time.monotonic() - started
    print("%d upload(s), %d refused, %.2f s, %.0f/s" % (len(requests), failed, elapsed,
          len(requests) / elapsed if elapsed else 0), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
