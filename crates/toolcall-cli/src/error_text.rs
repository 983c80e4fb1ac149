//! How a failed command's error is printed: each cause once.
//!
//! Errors here are chains (`anyhow` context over library errors over `io::Error`), and many
//! links already write their source into their own text (`cannot read {path}: {source}`,
//! thiserror's `transparent`), while others do not (plain context). Printing the chain as
//! is (`{:#}`) then says a cause two or three times (`…(os error 2): No such file or
//! directory (os error 2)`). [`one_line`] walks the chain from the root cause outwards and
//! keeps only what each link adds.

use std::error::Error;

/// The chain of `error` on one line, every cause said once.
pub fn one_line(error: &(dyn Error + 'static)) -> String {
    let mut texts: Vec<String> = Vec::new();
    let mut link = Some(error);
    while let Some(e) = link {
        texts.push(e.to_string());
        link = e.source();
    }
    let mut links = texts.into_iter().rev();
    let Some(mut said) = links.next() else {
        return String::new();
    };
    // The text of the link inside the current one (its source).
    let mut inner = said.clone();
    for text in links {
        if !said.contains(text.as_str()) {
            said = if let Some(own) = text.strip_suffix(inner.as_str()) {
                // `own: {source}`: keep `own`, unless it is empty or already said (a
                // context naming the path the inner error names too).
                let own = own.trim_end().trim_end_matches(':').trim_end();
                if own.is_empty() || said.contains(own) {
                    said
                } else {
                    format!("{own}: {said}")
                }
            } else if text.contains(inner.as_str()) {
                text.clone() // it says its source in the middle: it says it all
            } else {
                format!("{text}: {said}")
            };
        }
        inner = text;
    }
    said
}

#[cfg(test)]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// An error whose text says its source, as thiserror's `{source}` writes it.
    #[derive(Debug)]
    struct ReadError {
        path: String,
        source: std::io::Error,
    }

    impl std::fmt::Display for ReadError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot read {}: {}", self.path, self.source)
        }
    }

    impl Error for ReadError {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.source)
        }
    }

    #[derive(Debug)]
    struct Entry(ReadError);

    impl std::fmt::Display for Entry {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "tools entry #0: {}", self.0)
        }
    }

    impl Error for Entry {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    fn not_found() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::NotFound)
    }

    #[test]
    fn a_cause_its_wrapper_already_says_is_not_repeated() {
        let e = anyhow::Error::new(ReadError {
            path: "/nope.json".into(),
            source: not_found(),
        });
        let text = one_line(e.as_ref());
        assert_eq!(text, format!("cannot read /nope.json: {}", not_found()));
    }

    #[test]
    fn contexts_add_what_they_say_and_only_that() {
        let e = anyhow::Error::new(Entry(ReadError {
            path: "/t.json".into(),
            source: not_found(),
        }))
        .context("tools file /t.json")
        .context("loading the toolset");
        let text = one_line(e.as_ref());
        // Every link's own words once, outermost first.
        assert_eq!(text.matches(&not_found().to_string()).count(), 1, "{text}");
        assert_eq!(text.matches("tools entry #0").count(), 1, "{text}");
        assert!(
            text.starts_with(
                "loading the toolset: tools file /t.json: tools entry #0: cannot read /t.json: "
            ),
            "{text}"
        );
    }

    #[test]
    fn a_context_the_cause_already_names_is_dropped() {
        let e = anyhow::Error::new(ReadError {
            path: "tools file /t.json".into(),
            source: not_found(),
        })
        .context("tools file /t.json");
        assert_eq!(
            one_line(e.as_ref()),
            format!("cannot read tools file /t.json: {}", not_found())
        );
    }
}
