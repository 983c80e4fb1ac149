//! Which labelled box a spoken object name means: case, articles, plurals and configured
//! synonyms are ignored; ties go to the largest box, then the first one in the scene.

use std::collections::HashMap;

use super::SceneBox;

/// Words dropped from the front of a name ("the cup", "my headphones").
const ARTICLES: &[&str] = &[
    "the", "a", "an", "my", "your", "this", "that", "those", "these",
];

/// Longest name considered, in bytes (a model could send a whole paragraph).
const MAX_NAME: usize = 256;

/// One word to its singular form, by the regular English endings. Both the query and the
/// labels go through it, so "headphones" and "headphone" meet whatever the scene says.
fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies")
        && stem.len() > 1
    {
        return format!("{stem}y");
    }
    for (suffix, keep) in [
        ("sses", "ss"),
        ("shes", "sh"),
        ("ches", "ch"),
        ("xes", "x"),
        ("zes", "z"),
    ] {
        if let Some(stem) = word.strip_suffix(suffix)
            && !stem.is_empty()
        {
            return format!("{stem}{keep}");
        }
    }
    if let Some(stem) = word.strip_suffix('s')
        && stem.len() > 2
        && !["s", "u", "i"].iter().any(|e| stem.ends_with(e))
    {
        return stem.to_owned();
    }
    word.to_owned()
}

/// Lowercased words without punctuation, leading articles removed, each made singular.
pub fn normalise(name: &str) -> Vec<String> {
    let mut end = MAX_NAME.min(name.len());
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let cut = name.get(..end).unwrap_or("");
    let mut words: Vec<String> = cut
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    while words.len() > 1
        && words
            .first()
            .is_some_and(|w| ARTICLES.contains(&w.as_str()))
    {
        words.remove(0);
    }
    words.iter().map(|w| singular(w)).collect()
}

/// Names that mean the same: each group is a label and what people call it.
#[derive(Debug, Clone, Default)]
pub struct Synonyms {
    /// normalised name → group index
    groups: HashMap<Vec<String>, usize>,
}

impl Synonyms {
    /// From `{"cup": ["mug", "coffee cup"], "laptop": "notebook"}`.
    pub fn from_pairs<I, S>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (S, Vec<S>)>,
        S: AsRef<str>,
    {
        let mut groups = HashMap::new();
        for (i, (name, alts)) in pairs.into_iter().enumerate() {
            groups.insert(normalise(name.as_ref()), i);
            for a in alts {
                groups.insert(normalise(a.as_ref()), i);
            }
        }
        Synonyms { groups }
    }

    fn same(&self, a: &[String], b: &[String]) -> bool {
        match (self.groups.get(a), self.groups.get(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }
}

/// How well a label matches: exact beats synonym beats a shared head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strength {
    /// The last words agree ("coffee cup" ~ "cup").
    HeadWord = 1,
    Synonym = 2,
    Exact = 3,
}

/// The index of the best box for `query`, and how it matched.
pub fn best_match(
    query: &str,
    boxes: &[SceneBox],
    synonyms: &Synonyms,
) -> Option<(usize, Strength)> {
    let q = normalise(query);
    if q.is_empty() {
        return None;
    }
    let mut best: Option<(usize, Strength, u64)> = None;
    for (i, b) in boxes.iter().enumerate() {
        let l = normalise(&b.label);
        let strength = if l == q {
            Strength::Exact
        } else if synonyms.same(&q, &l) {
            Strength::Synonym
        } else if !l.is_empty() && l.last() == q.last() {
            Strength::HeadWord
        } else {
            continue;
        };
        let area = b.area();
        // Strictly better only: on a tie the earlier box stays.
        let better = match best {
            None => true,
            Some((_, s, a)) => (strength, area) > (s, a),
        };
        if better {
            best = Some((i, strength, area));
        }
    }
    best.map(|(i, s, _)| (i, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(labels: &[(&str, [u16; 4])]) -> Vec<SceneBox> {
        labels
            .iter()
            .map(|(l, b)| SceneBox {
                label: (*l).to_owned(),
                box_2d: *b,
            })
            .collect()
    }

    // covers P-HL
    #[test]
    fn normalising_drops_case_articles_and_plurals() {
        assert_eq!(normalise("The Cups"), ["cup"]);
        assert_eq!(normalise("my glasses"), ["glass"]);
        assert_eq!(normalise("Headphones!"), ["headphone"]);
        assert_eq!(normalise("an apple"), ["apple"]);
        assert_eq!(normalise("your berries"), ["berry"]);
        assert_eq!(normalise("boxes"), ["box"]);
        assert_eq!(normalise("glass"), ["glass"]);
        assert_eq!(normalise("bus"), ["bus"]);
        assert_eq!(normalise("a"), ["a"]);
        assert!(normalise("  ?! ").is_empty());
    }

    // covers P-HL
    #[test]
    fn best_match_prefers_exact_then_synonym_then_head_word_then_size_then_order() {
        let s = scene(&[
            ("coffee cup", [0, 0, 100, 100]),
            ("cup", [0, 0, 10, 10]),
            ("mug", [0, 0, 500, 500]),
            ("cup", [0, 0, 10, 10]),
        ]);
        let syn = Synonyms::from_pairs([("cup", vec!["mug"])]);
        // Exact beats the bigger synonym and head-word matches; equal boxes → the first.
        assert_eq!(best_match("the cups", &s, &syn), Some((1, Strength::Exact)));
        // Without synonyms "mug" only matches itself.
        assert_eq!(
            best_match("mug", &s, &Synonyms::default()),
            Some((2, Strength::Exact))
        );
        let only_syn = scene(&[("mug", [0, 0, 5, 5]), ("coffee cup", [0, 0, 900, 900])]);
        assert_eq!(
            best_match("cup", &only_syn, &syn),
            Some((0, Strength::Synonym))
        );
        let head = scene(&[
            ("coffee cup", [0, 0, 100, 100]),
            ("tea cup", [0, 0, 200, 200]),
        ]);
        assert_eq!(
            best_match("cup", &head, &syn),
            Some((1, Strength::HeadWord))
        );
        assert_eq!(best_match("laptop", &s, &syn), None);
        assert_eq!(best_match("", &s, &syn), None);
    }
}
