//! The opener table: every literal that starts markup for the enabled families (region
//! openers, reasoning markers, control tokens to strip), built once per parse from the
//! registry.
//!
//! The text scan stops only at bytes that can start markup ([`StopSet`]); there the table
//! is asked which opener, if any, starts at that position. Openers are bucketed by their
//! first byte, so a stop costs a comparison with the few openers sharing that byte (a
//! handful of short literals: cheaper here than an Aho-Corasick automaton's setup and
//! per-call overhead, since the bulk skip between stops is what dominates prose).

use std::sync::{Arc, Mutex};

use crate::FormatId;
use crate::family::{Family, ReasoningMarker, SuffixedMarker, THINK};

/// A family that reads an opener (its index among the family's openers), resolved once
/// when the table is built rather than looked up for every region.
#[derive(Clone, Copy)]
pub(crate) struct ReadBy {
    pub family: &'static dyn Family,
    pub opener: usize,
}

impl ReadBy {
    fn new(family: &'static dyn Family, opener: usize) -> Self {
        ReadBy { family, opener }
    }
}

impl std::fmt::Debug for ReadBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.family.id(), self.opener)
    }
}

impl PartialEq for ReadBy {
    fn eq(&self, other: &Self) -> bool {
        self.family.id() == other.family.id() && self.opener == other.opener
    }
}

/// What an opener starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// A region read by these families, tried in priority order (family, opener index);
    /// the family is resolved when the table is built, not per region.
    Region(Vec<ReadBy>),
    /// A reasoning block, up to its closing marker.
    Reasoning(ReasoningMarker),
    /// A control token removed from the text.
    Strip,
    /// A suffixed reasoning marker's common start, its suffix and `>` to follow.
    SuffixedReasoning(SuffixedMarker),
    /// A suffixed reasoning close without its opener, removed once its suffix is read.
    SuffixedStrip,
}

#[derive(Debug, Clone)]
pub(crate) struct Opener {
    pub text: &'static str,
    pub action: Action,
}

/// The result of looking for an opener at one position.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    No,
    /// The bytes so far are a prefix of an opener: wait for more.
    Wait,
    At(usize),
}

/// A literal that opens a region only at a line start, ignoring ASCII case
/// ([`crate::family::Family::line_openers`]).
#[derive(Debug, Clone)]
pub(crate) struct LineOpener {
    pub text: &'static str,
    /// Families reading it, in priority order (family, index in its `line_openers`).
    pub families: Vec<ReadBy>,
}

#[derive(Debug, Clone)]
pub(crate) struct Openers {
    list: Vec<Opener>,
    by_first: Vec<Vec<usize>>,
    /// For each first byte with openers, the second bytes they can continue with (a 256-bit
    /// set, every bit for a one-byte opener): a stop byte followed by anything else is
    /// declined without comparing it to each opener (a flood of `<` or `[`). Sparse: the
    /// set of first byte `b` is `second[second_slot[b] - 1]` (0: no opener starts with `b`).
    second: Vec<[u64; 4]>,
    second_slot: [u8; 256],
    pub stops: StopSet,
    /// The distinct first bytes of the openers, and the same as a table.
    firsts: Vec<u8>,
    is_first: [bool; 256],
    /// Line-start openers (few: looked at only at line starts).
    pub line: Vec<LineOpener>,
    /// First bytes of the line-start openers, in both ASCII cases.
    line_first: [bool; 256],
}

impl Openers {
    /// The table for `order` (`chosen`, `reasoning_only`: see [`Openers::build`]), built
    /// once per distinct order and shared: every parse and stream starts by asking for it,
    /// and building it cost more than parsing a small reply. A few dozen orders are kept
    /// (auto mode, each explicit format in use).
    pub(crate) fn cached(order: &[FormatId], chosen: bool, reasoning_only: bool) -> Arc<Openers> {
        const KEEP: usize = 32;
        type Cache = Vec<((Vec<FormatId>, bool, bool), Arc<Openers>)>;
        static CACHE: Mutex<Cache> = Mutex::new(Vec::new());
        if let Ok(cache) = CACHE.lock()
            && let Some((_, o)) = cache.iter().find(|((k, c, r), _)| {
                k.as_slice() == order && *c == chosen && *r == reasoning_only
            })
        {
            return Arc::clone(o);
        }
        let built = Arc::new(Openers::build(order, chosen, reasoning_only));
        if let Ok(mut cache) = CACHE.lock() {
            if cache.len() >= KEEP {
                cache.remove(0);
            }
            cache.push(((order.to_vec(), chosen, reasoning_only), Arc::clone(&built)));
        }
        built
    }

    /// The table for the enabled families, in priority order; `chosen`: the families were
    /// chosen (not auto mode), so their [`crate::family::WhenChosen`] markup is read too;
    /// `reasoning_only` ([`crate::ParseOptions::reasoning_only`]): no line-start opener
    /// (they only start calls); literal region openers stay, since some regions are
    /// headers and channels around reasoning (the engine keeps a region with calls as text).
    pub(crate) fn build(order: &[FormatId], chosen: bool, reasoning_only: bool) -> Self {
        let mut list: Vec<Opener> = Vec::new();
        let mut add = |text: &'static str, action: Action| {
            if text.is_empty() {
                return;
            }
            match list.iter_mut().find(|o| o.text == text) {
                Some(o) => {
                    if let (Action::Region(have), Action::Region(more)) = (&mut o.action, action) {
                        have.extend(more);
                    }
                }
                None => list.push(Opener { text, action }),
            }
        };
        let families: Vec<_> = order
            .iter()
            .filter_map(|f| Some((*f, f.family()?)))
            .collect();
        let mut reasoning = vec![THINK];
        for (_, fam) in &families {
            let when_chosen = chosen.then(|| fam.when_chosen().reasoning);
            for r in fam
                .reasoning()
                .iter()
                .chain(when_chosen.unwrap_or_default())
            {
                if !reasoning.contains(r) {
                    reasoning.push(*r);
                }
            }
        }
        for r in &reasoning {
            add(r.open, Action::Reasoning(*r));
        }
        for (_, fam) in &families {
            for (i, o) in fam.openers().iter().enumerate() {
                add(o, Action::Region(vec![ReadBy::new(*fam, i)]));
            }
        }
        // Line-start openers only ever start calls.
        let line_families = if reasoning_only {
            &[][..]
        } else {
            &families[..]
        };
        let mut line: Vec<LineOpener> = Vec::new();
        for (_, fam) in line_families {
            for (i, &text) in fam.line_openers().iter().enumerate() {
                if text.is_empty() {
                    continue;
                }
                match line.iter_mut().find(|o| o.text.eq_ignore_ascii_case(text)) {
                    Some(o) => o.families.push(ReadBy::new(*fam, i)),
                    None => line.push(LineOpener {
                        text,
                        families: vec![ReadBy::new(*fam, i)],
                    }),
                }
            }
        }
        for (_, fam) in &families {
            let when_chosen = chosen.then(|| fam.when_chosen().strip);
            for s in fam.strip().iter().chain(when_chosen.unwrap_or_default()) {
                add(s, Action::Strip);
            }
        }
        // A closing reasoning marker without its opener is markup too: removed.
        for r in &reasoning {
            add(r.close, Action::Strip);
        }
        for (_, fam) in &families {
            for m in fam.suffixed_reasoning() {
                add(m.open, Action::SuffixedReasoning(*m));
                add(m.close, Action::SuffixedStrip);
            }
        }
        let mut by_first = vec![Vec::new(); 256];
        for (i, o) in list.iter().enumerate() {
            if let Some(&b) = o.text.as_bytes().first() {
                by_first[usize::from(b)].push(i);
            }
        }
        let mut second: Vec<[u64; 4]> = Vec::new();
        let mut second_slot = [0u8; 256];
        for o in &list {
            let t = o.text.as_bytes();
            let Some(&b) = t.first() else { continue };
            let slot = &mut second_slot[usize::from(b)];
            if *slot == 0 {
                // Past 255 first bytes the rest go unfiltered (slot 0: compared as before).
                let Ok(n) = u8::try_from(second.len() + 1) else {
                    continue;
                };
                second.push([0; 4]);
                *slot = n;
            }
            let Some(set) = second.get_mut(usize::from(*slot) - 1) else {
                continue;
            };
            match t.get(1) {
                Some(&c) => set[usize::from(c >> 6)] |= 1 << (c & 63),
                None => *set = [u64::MAX; 4],
            }
        }
        let mut firsts: Vec<u8> = list.iter().filter_map(|o| o.text.bytes().next()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let mut line_first = [false; 256];
        for b in line.iter().filter_map(|o| o.text.bytes().next()) {
            line_first[usize::from(b.to_ascii_lowercase())] = true;
            line_first[usize::from(b.to_ascii_uppercase())] = true;
        }
        Openers {
            list,
            by_first,
            second,
            second_slot,
            stops: StopSet::new(&firsts),
            is_first: std::array::from_fn(|b| firsts.iter().any(|&f| usize::from(f) == b)),
            firsts,
            line,
            line_first,
        }
    }

    /// Whether an opener occurs anywhere in the whole `text` (at its end, only a complete
    /// one): the positions holding an opener's first byte (`memchr` for up to three
    /// distinct ones, else a table) are each looked at as the scan would.
    pub(crate) fn occurs_in(&self, text: &str) -> bool {
        let t = text.as_bytes();
        let mut from = 0;
        while let Some(rest) = t.get(from..) {
            let next = match self.firsts.as_slice() {
                [] => None,
                [a] => memchr::memchr(*a, rest),
                [a, b] => memchr::memchr2(*a, *b, rest),
                [a, b, c] => memchr::memchr3(*a, *b, *c, rest),
                _ => rest.iter().position(|&b| self.is_first[usize::from(b)]),
            };
            let Some(i) = next else { return false };
            if matches!(self.at(t, from + i, true), Found::At(_)) {
                return true;
            }
            from += i + 1;
        }
        false
    }

    /// Whether `s` starts with an opener of a family's region (`<tool_call>`, ...).
    pub(crate) fn starts_with_region(&self, s: &str) -> bool {
        self.list
            .iter()
            .any(|o| matches!(o.action, Action::Region(_)) && s.starts_with(o.text))
    }

    /// Whether a line-start opener can start with `b`.
    pub(crate) fn line_first(&self, b: u8) -> bool {
        self.line_first[usize::from(b)]
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Opener> {
        self.list.get(i)
    }

    /// The longest opener starting at `bytes[pos]`; `Wait` while a longer one could still
    /// match (decisions never depend on where the input was split).
    pub(crate) fn at(&self, bytes: &[u8], pos: usize, is_final: bool) -> Found {
        let Some(&b) = bytes.get(pos) else {
            return Found::No;
        };
        let rest = bytes.get(pos..).unwrap_or(&[]);
        if let Some(&c) = rest.get(1)
            && let Some(set) = usize::from(self.second_slot[usize::from(b)])
                .checked_sub(1)
                .and_then(|i| self.second.get(i))
            && set[usize::from(c >> 6)] & (1 << (c & 63)) == 0
        {
            return Found::No;
        }
        let mut best: Option<usize> = None;
        let mut partial = false;
        for &i in self
            .by_first
            .get(usize::from(b))
            .map_or(&[][..], Vec::as_slice)
        {
            let Some(o) = self.list.get(i) else { continue };
            let t = o.text.as_bytes();
            if rest.len() >= t.len() {
                if rest.starts_with(t)
                    && best.is_none_or(|j| self.list.get(j).is_some_and(|b| b.text.len() < t.len()))
                {
                    best = Some(i);
                }
            } else if t.starts_with(rest) {
                partial = true;
            }
        }
        // A partial opener is longer than any full one: wait until it is decided.
        if partial && !is_final {
            return Found::Wait;
        }
        best.map_or(Found::No, Found::At)
    }
}

/// Bytes at which the text scan must look closer: the fixed markup bytes (newline, fence,
/// brackets, call parenthesis) plus the first byte of every opener.
#[derive(Debug, Clone)]
pub(crate) struct StopSet {
    table: [bool; 256],
    /// Opener first bytes outside the fixed set, padded with `\n` (already a stop).
    extra: [u8; 4],
    /// More than four extra bytes: the block test uses the table.
    many: bool,
}

const FIXED: [u8; 6] = [b'\n', b'`', b'<', b'[', b'{', b'('];

impl StopSet {
    fn new(firsts: &[u8]) -> Self {
        let mut table = [false; 256];
        for b in FIXED {
            table[usize::from(b)] = true;
        }
        let mut extra = [b'\n'; 4];
        let mut n = 0;
        for &b in firsts {
            if !table[usize::from(b)] {
                table[usize::from(b)] = true;
                if let Some(slot) = extra.get_mut(n) {
                    *slot = b;
                }
                n += 1;
            }
        }
        StopSet {
            table,
            extra,
            many: n > extra.len(),
        }
    }

    pub(crate) fn is_stop(&self, b: u8) -> bool {
        self.table[usize::from(b)]
    }

    /// Index of the first stop byte in `s` (or its length). Blocks of 32 bytes are tested
    /// with branch-free compares the compiler vectorises (prose has a stop byte only every
    /// hundred bytes or so); the table finds the exact byte inside a block that has one.
    pub(crate) fn find(&self, s: &[u8]) -> usize {
        const BLOCK: usize = 32;
        let mut at = 0;
        if !self.many {
            let [e0, e1, e2, e3] = self.extra;
            for c in s.chunks_exact(BLOCK) {
                let mut hit = 0u8;
                for &b in c {
                    hit |= u8::from(b == b'\n')
                        | u8::from(b == b'`')
                        | u8::from(b == b'<')
                        | u8::from(b == b'[')
                        | u8::from(b == b'{')
                        | u8::from(b == b'(')
                        | u8::from(b == e0)
                        | u8::from(b == e1)
                        | u8::from(b == e2)
                        | u8::from(b == e3);
                }
                if hit != 0 {
                    break;
                }
                at += BLOCK;
            }
        }
        s.get(at..)
            .unwrap_or(&[])
            .iter()
            .position(|&b| self.table[usize::from(b)])
            .map_or(s.len(), |i| at + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_opener_wins_and_prefixes_wait() {
        let all: Vec<FormatId> = FormatId::all().collect();
        let o = Openers::build(&all, false, false);
        let find = |s: &str, fin: bool| match o.at(s.as_bytes(), 0, fin) {
            Found::At(i) => Some(o.get(i).map(|x| x.text)),
            Found::Wait => None,
            Found::No => Some(None),
        };
        assert_eq!(find("<tool_call>{", false), Some(Some("<tool_call>")));
        assert_eq!(find("<tool_ca", false), None);
        assert_eq!(find("<tool_ca", true), Some(None));
        assert_eq!(find("<think>x", false), Some(Some("<think>")));
        assert_eq!(find("<b>", false), Some(None));
    }

    #[test]
    fn stop_set_finds_extra_bytes() {
        let s = StopSet::new(b">f");
        let text = "a".repeat(40) + ">" + "b";
        assert_eq!(s.find(text.as_bytes()), 40);
        assert_eq!(s.find(b"abcde"), 5);
        let many = StopSet::new(b">fghij");
        assert_eq!(many.find(("a".repeat(70) + "j").as_bytes()), 70);
    }
}
