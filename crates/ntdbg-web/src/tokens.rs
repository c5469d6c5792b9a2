//! Per-product upload tokens (`ntdbg collect --tokens FILE`): a report is accepted only with
//! the token of the product it names. The file has one `PRODUCT TOKEN` pair a line (`*` for
//! any product), `#` comments and blank lines; tokens are never printed.

use crate::access::same_secret;
use std::path::Path;

/// The tokens of each product.
#[derive(Clone, Default)]
pub struct ProductTokens {
    pairs: Vec<(String, String)>,
}

impl std::fmt::Debug for ProductTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let products: Vec<&str> = self.pairs.iter().map(|(p, _)| p.as_str()).collect();
        f.debug_struct("ProductTokens")
            .field("products", &products)
            .finish()
    }
}

/// Why a report's token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request carried no token.
    Missing,
    /// The token is no product's.
    Unknown,
    /// The token is not the product's.
    Wrong,
}

impl ProductTokens {
    /// Reads a tokens file.
    pub fn load(path: &Path) -> Result<ProductTokens, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --tokens {}: {e}", path.display()))?;
        ProductTokens::parse(&text).map_err(|e| format!("--tokens {}: {e}", path.display()))
    }

    /// Parses the text of a tokens file.
    pub fn parse(text: &str) -> Result<ProductTokens, String> {
        let mut pairs = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(product), Some(token), None) => {
                    pairs.push((product.to_string(), token.to_string()))
                }
                _ => {
                    return Err(format!(
                        "line {}: expected `PRODUCT TOKEN` (`*` for any product)",
                        i + 1
                    ))
                }
            }
        }
        if pairs.is_empty() {
            return Err("no `PRODUCT TOKEN` line".to_string());
        }
        Ok(ProductTokens { pairs })
    }

    /// Whether `token` is any product's (checked before a body is read).
    pub fn knows(&self, token: Option<&str>) -> Result<(), Refusal> {
        let token = token.ok_or(Refusal::Missing)?;
        let mut known = false;
        for (_, t) in &self.pairs {
            known |= same_secret(token, t);
        }
        if known {
            Ok(())
        } else {
            Err(Refusal::Unknown)
        }
    }

    /// Whether a report for `product` (as its client named it) may come in with `token`.
    pub fn check(&self, product: Option<&str>, token: Option<&str>) -> Result<(), Refusal> {
        let token = token.ok_or(Refusal::Missing)?;
        let product = product.unwrap_or("");
        // Every pair is compared, so timing does not tell which products exist.
        let mut accepted = false;
        for (p, t) in &self.pairs {
            let applies = p == "*" || p == product;
            accepted |= applies & same_secret(token, t);
        }
        if accepted {
            Ok(())
        } else {
            Err(Refusal::Wrong)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_product_has_its_token() {
        let tokens = ProductTokens::parse("# products\ncrashy  t1\nother t2\n\n* any\n").unwrap();
        assert_eq!(tokens.check(Some("crashy"), Some("t1")), Ok(()));
        assert_eq!(
            tokens.check(Some("crashy"), Some("t2")),
            Err(Refusal::Wrong)
        );
        assert_eq!(tokens.check(Some("crashy"), Some("any")), Ok(()));
        assert_eq!(tokens.check(None, Some("any")), Ok(()));
        assert_eq!(tokens.check(Some("crashy"), None), Err(Refusal::Missing));
        assert_eq!(tokens.knows(Some("t2")), Ok(()));
        assert_eq!(tokens.knows(Some("t3")), Err(Refusal::Unknown));
        assert!(!format!("{tokens:?}").contains("t1"));
        assert!(ProductTokens::parse("crashy").is_err());
        assert!(ProductTokens::parse("a b c").is_err());
        assert!(ProductTokens::parse("# nothing").is_err());
    }
}
