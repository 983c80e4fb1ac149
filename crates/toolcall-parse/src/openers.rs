//! The opener table: every literal that starts markup for the enabled families (region
//! openers, reasoning markers, control tokens to strip), built once per parse from the
//! registry.
//!
//! The text scan stops only at bytes that can start markup ([`StopSet`]); there the table
//! is asked which opener, if any, starts at that position. Openers are bucketed by their
//! first byte, so a stop costs a comparison with the few openers sharing that byte (a
//! handful of short literals: cheaper here than an Aho-Corasick automaton's setup and
//! per-call overhead, since the bulk skip between stops is what dominates prose).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{
    Family, Opening, ReasoningMarker, RegionReader, Removes, SuffixedMarker, THINK,
};

/// The opener a lookup found last, kept by its caller for its next lookup
/// ([`Openers::at_after`], [`Openers::none_at_after`]). An atomic read and written with
/// relaxed order (plain moves on x86-64 and AArch64), not a `Cell`: the engine holds two,
/// and a `Cell` would make `StreamParser` no longer `Sync` (the Python package's stream
/// class requires it).
#[derive(Debug)]
pub(crate) struct LastFound(AtomicU32);

impl LastFound {
    pub(crate) const fn new(opener: u32) -> Self {
        LastFound(AtomicU32::new(opener))
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub(crate) fn set(&self, opener: u32) {
        self.0.store(opener, Ordering::Relaxed);
    }
}

/// A family that reads an opener (its index among the family's openers), resolved once
/// when the table is built rather than looked up for every region.
#[derive(Clone, Copy)]
pub(crate) struct ReadBy {
    pub family: &'static dyn Family,
    pub opener: usize,
    /// [`Family::opening`] for this opener.
    opening: Opening,
    /// [`Family::removes`].
    removes: Option<Removes>,
    /// Its region is opened exactly as an earlier family's of the same opener (the same
    /// decline function and opener index, nothing removed): where that one declined at
    /// once, so does this one, unasked ([`ReadBy::declined_as_before`]). Hermes and
    /// ernie45 read `<tool_call>` with one decline test, asked twice at every opener of a
    /// flood (~40 instructions).
    twin: bool,
}

impl ReadBy {
    pub(crate) fn new(family: &'static dyn Family, opener: usize) -> Self {
        ReadBy {
            family,
            opener,
            opening: family.opening(opener),
            removes: family.removes(),
            twin: false,
        }
    }

    /// Whether `self` opens a region exactly as `earlier` does, and removes nothing.
    fn twin_of(&self, earlier: &ReadBy) -> bool {
        match (self.opening, earlier.opening) {
            (
                Opening::Declines { declines, opener },
                Opening::Declines {
                    declines: d,
                    opener: o,
                },
            ) => self.removes.is_none() && opener == o && std::ptr::fn_addr_eq(declines, d),
            _ => false,
        }
    }

    /// Whether this family declines a region at once because every earlier family of the
    /// opener did (asked by `open`, which reaches a family only past earlier declines).
    #[inline]
    pub(crate) fn declined_as_before(&self) -> bool {
        self.twin
    }

    /// [`Family::open_region`] for this opener, through its resolved [`Opening`].
    #[inline]
    pub(crate) fn open_region(
        &self,
        region: &str,
        is_final: bool,
        ctx: &Ctx,
    ) -> Option<Option<Box<dyn RegionReader>>> {
        match self.opening {
            Opening::Declines { declines, opener } => {
                (!declines(opener, region, is_final)).then(|| self.family.reader(self.opener, ctx))
            }
            Opening::Region => self.family.open_region(self.opener, region, is_final, ctx),
        }
    }

    /// [`Family::removes`] for this opener.
    #[inline]
    pub(crate) fn removes(&self, region: &str, is_final: bool) -> Option<usize> {
        self.removes?(self.opener, region, is_final)
    }

    /// [`Family::declines`] for this opener, through its resolved [`Opening`].
    #[inline]
    pub(crate) fn declines(&self, region: &str, is_final: bool) -> bool {
        match self.opening {
            Opening::Declines { declines, opener } => declines(opener, region, is_final),
            Opening::Region => self.family.declines(self.opener, region, is_final),
        }
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
    /// The openers' bytes as a trie, walked once per stop byte: the longest opener at a
    /// position costs a few steps per byte it matches, however many openers share its
    /// start (dozens begin with `<|`: comparing each cost thousands of instructions per
    /// stop in a flood of `<|eot|>`).
    trie: Trie,
    pub stops: StopSet,
    /// Per opener, [`Openers::inert`].
    inert: Vec<u8>,
    /// Per opener, what [`Openers::copy_passed_found`] asks of the bytes after a copy.
    copy_pass: Vec<CopyPass>,
    /// The checks of every [`CopyPass`]: a byte's offset in its opener and the trie node
    /// the lookup from it stands at after the opener's bytes ([`TAIL_OPENER`]: the passed
    /// bytes end there, whatever follows).
    copy_checks: Vec<(u32, u32)>,
    /// Per opener, its text, the trie node where it ends and whether that node is a leaf
    /// ([`Openers::longest_is`]; an empty text for one whose node another owns: none, the
    /// table merges equal texts, and an empty text never matches).
    ends: Vec<(&'static [u8], u32, bool)>,
    /// The distinct first bytes of the openers, and the same as a table.
    firsts: Vec<u8>,
    is_first: [bool; 256],
    /// Line-start openers (few: looked at only at line starts).
    pub line: Vec<LineOpener>,
    /// First bytes of the line-start openers, in both ASCII cases.
    line_first: [bool; 256],
    /// [`Openers::run_passes`].
    runs: [bool; 256],
    /// [`Openers::brackets_free`].
    brackets_free: bool,
    /// Per opener, [`Openers::repeats_declined`].
    repeats_declined: Vec<bool>,
    /// Per opener, [`Openers::runs_declined`].
    runs_declined: Vec<bool>,
    /// Openers that end an open reasoning block ([`Family::ends_reasoning`]); empty
    /// when calls are never taken (`reasoning_only`).
    pub ends_reasoning: Vec<&'static str>,
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
        for o in &mut list {
            if let Action::Region(families) = &mut o.action {
                for k in 1..families.len() {
                    let twin = families[..k].iter().any(|e| families[k].twin_of(e));
                    families[k].twin = twin;
                }
            }
        }
        let trie = Trie::new(&list);
        let ends = list
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let found = trie.node_of(o.text.as_bytes()).and_then(|node| {
                    let n = trie.nodes.get(node as usize)?;
                    (n.opener as usize == i).then_some((o.text.as_bytes(), node, n.start == n.end))
                });
                found.unwrap_or((&b""[..], 0, false))
            })
            .collect();
        let stops = StopSet::new(list.iter().map(|o| o.text.as_bytes()));
        let inert = list
            .iter()
            .map(|o| {
                let t = o.text.as_bytes();
                // `<` is a fixed stop only as openers' first byte: the scan reads it as
                // text where none starts.
                let starts = |j: usize| t.get(j..).is_some_and(|rest| trie.may_start(rest));
                let mut j = 1;
                while let Some(&b) = t.get(j) {
                    if starts(j) {
                        break;
                    }
                    if !matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(') {
                        j += 1;
                        continue;
                    }
                    // A run of exactly three backticks after the opener's first byte, no
                    // newline between (so not at a line start: no fence), and followed by
                    // another of its bytes (so the scan finds the run whole): the scan
                    // passes them as text (`Action: ```json`, whose ~380-instruction stop
                    // and bulk skip a declined unit paid).
                    let triple = b == b'`'
                        && t.get(j..j + 3) == Some(&b"```"[..])
                        && t.get(j + 3).is_some_and(|&c| c != b'`')
                        && t.get(j - 1).is_some_and(|&c| c != b'`')
                        && t.get(..j)
                            .is_some_and(|h| h.iter().any(|c| !c.is_ascii_whitespace()))
                        && !starts(j + 1)
                        && !starts(j + 2);
                    if !triple {
                        break;
                    }
                    j += 3;
                }
                u8::try_from(j - 1).unwrap_or(u8::MAX)
            })
            .collect();
        // What `copy_passed_found` passes of each opener, decided by its own bytes where
        // they can be (the lookup from each stop through the rest of the opener), so that a
        // copy asks only the bytes after it (walking the trie over the opener's bytes at each
        // copy cost ~100 instructions, two copies a unit of `>>>>{w}`).
        let mut copy_checks: Vec<(u32, u32)> = Vec::new();
        let copy_pass = list
            .iter()
            .zip(&inert)
            .map(|(o, &inert): (&Opener, &u8)| {
                let t = o.text.as_bytes();
                let from = u32::try_from(copy_checks.len()).unwrap_or(u32::MAX);
                let first = 1 + usize::from(inert);
                let mut k = first;
                while k + 1 < t.len() {
                    let b = t[k];
                    if stops.is_stop(b) {
                        let node = if matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(') {
                            TAIL_OPENER
                        } else {
                            trie.tail(&t[k..])
                        };
                        if node != TAIL_NO {
                            copy_checks.push((u32::try_from(k).unwrap_or(u32::MAX), node));
                        }
                        if node == TAIL_OPENER {
                            break;
                        }
                    }
                    k += 1;
                }
                CopyPass {
                    from,
                    to: u32::try_from(copy_checks.len()).unwrap_or(u32::MAX),
                    len: u32::try_from(t.len()).unwrap_or(u32::MAX),
                    all: u32::try_from(first.max(t.len().saturating_sub(1))).unwrap_or(u32::MAX),
                }
            })
            .collect();
        let mut firsts: Vec<u8> = list.iter().filter_map(|o| o.text.bytes().next()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let mut line_first = [false; 256];
        for b in line.iter().filter_map(|o| o.text.bytes().next()) {
            line_first[usize::from(b.to_ascii_lowercase())] = true;
            line_first[usize::from(b.to_ascii_uppercase())] = true;
        }
        let runs = std::array::from_fn(|b| {
            let Ok(b) = u8::try_from(b) else { return false };
            let node = trie.root[usize::from(b)];
            node != 0
                && !trie.follows(b, b)
                && trie
                    .nodes
                    .get(node as usize)
                    .is_some_and(|n| n.opener == NO_OPENER)
                && !matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(' | b' ' | b'\t' | b'\r')
                && !line_first[usize::from(b)]
                // Not a name's byte: prose's letters that start openers are not asked.
                && !b.is_ascii_alphanumeric()
                && b != b'_'
        });
        // No opener at a bracket followed by a bracket (`[[`, `[{`, `{[`, `{{`).
        let brackets_free = [b'[', b'{'].iter().all(|&x| {
            let node = trie.root[usize::from(x)];
            node == 0
                || (!trie.follows(x, b'[')
                    && !trie.follows(x, b'{')
                    && trie
                        .nodes
                        .get(node as usize)
                        .is_some_and(|n| n.opener == NO_OPENER))
        });
        let mut ends_reasoning: Vec<&'static str> = Vec::new();
        for (_, fam) in line_families {
            for e in fam.ends_reasoning() {
                if !e.is_empty() && !ends_reasoning.contains(e) {
                    ends_reasoning.push(e);
                }
            }
        }
        let repeats_declined = list
            .iter()
            .map(|o| match &o.action {
                Action::Region(families) => {
                    !families.is_empty()
                        && families
                            .iter()
                            .all(|by| by.family.declines_repeated(by.opener))
                }
                _ => false,
            })
            .collect();
        let runs_declined = list
            .iter()
            .map(|o| match &o.action {
                Action::Region(families) => {
                    !families.is_empty() && families.iter().all(|by| by.family.has_declined_run())
                }
                _ => false,
            })
            .collect();
        Openers {
            ends_reasoning,
            runs_declined,
            list,
            trie,
            ends,
            inert,
            copy_pass,
            copy_checks,
            stops,
            is_first: std::array::from_fn(|b| firsts.iter().any(|&f| usize::from(f) == b)),
            firsts,
            line,
            line_first,
            runs,
            brackets_free,
            repeats_declined,
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

    /// Whether no opener starts with byte `b` (then [`Openers::none_at`] is `Ok(true)` at
    /// every `b`).
    pub(crate) fn none_starts_with(&self, b: u8) -> bool {
        self.trie.root[usize::from(b)] == 0
    }

    /// Whether a run of `b` is text up to its last byte: `b` starts openers (a stop) but
    /// none is `b` alone and none goes on with another `b`, so the text scan finds none at a
    /// `b` followed by `b`; and the scan reads `b` as an ordinary byte (no newline, blank,
    /// backtick, bracket, parenthesis, nor a line-start opener's first byte), and it is no
    /// name's byte (ASCII letters, digits, `_`: prose's doubled letters are not asked). A
    /// flood of `<` then costs no opener lookup a byte.
    #[inline]
    pub(crate) fn run_passes(&self, b: u8) -> bool {
        self.runs[usize::from(b)]
    }

    /// Whether no opener starts at a `[` or `{` followed by a `[` or `{`: inside a run of
    /// brackets the scan then finds no opener at any byte but the run's last
    /// (`Engine::pass_brackets`).
    #[inline]
    pub(crate) fn brackets_free(&self) -> bool {
        self.brackets_free
    }

    /// Whether every family of region opener `i` declines it followed directly by itself
    /// ([`Family::declines_repeated`]), asked once when the table is built.
    #[inline]
    pub(crate) fn repeats_declined(&self, i: usize) -> bool {
        self.repeats_declined.get(i).copied().unwrap_or(false)
    }

    /// Whether every family of region opener `i` may know a run of declined positions
    /// after it ([`Family::has_declined_run`]): else the shortest of their runs is `0`,
    /// unasked (only functionary_v3_2's `>>>` has one; `<tool_call>`'s four families were
    /// asked at every opener of a flood, ~45 instructions).
    pub(crate) fn runs_declined(&self, i: usize) -> bool {
        self.runs_declined.get(i).copied().unwrap_or(false)
    }

    /// Whether a line-start opener can start with `b`.
    pub(crate) fn line_first(&self, b: u8) -> bool {
        self.line_first[usize::from(b)]
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Opener> {
        self.list.get(i)
    }

    /// The most bytes an opener lookup reads: the longest opener and one byte more.
    pub(crate) fn lookahead(&self) -> usize {
        self.list.iter().map(|o| o.text.len()).max().unwrap_or(0) + 1
    }

    /// Whether no opener starts at `bytes[pos]`, even with more bytes to come (what
    /// [`Openers::at`] answers `Found::No` to with `is_final` false): the root lookup and
    /// the follow set inlined into the text scan, which asks this at every stop byte of
    /// prose; the walk only when the next byte goes on an opener, whose answer other than
    /// `Found::No` is the `Err`.
    #[inline(always)]
    pub(crate) fn none_at(&self, bytes: &[u8], pos: usize) -> Result<bool, Found> {
        self.none_at_by(bytes, pos, None)
    }

    /// [`Openers::none_at`] whose walk goes on from the node of opener `last` (the one this
    /// found last, kept by the caller, any value at first) where its text is there
    /// ([`Openers::last_at`]); the opener found is kept in `last`. The text scan's copy, whose stops in an
    /// opener flood find the same opener each time (a flood of `<|end|>x` walked ~354
    /// instructions a unit under `<|`).
    #[inline(always)]
    pub(crate) fn none_at_after(
        &self,
        bytes: &[u8],
        pos: usize,
        last: &LastFound,
    ) -> Result<bool, Found> {
        self.none_at_by(bytes, pos, Some(last))
    }

    #[inline(always)]
    fn none_at_by(
        &self,
        bytes: &[u8],
        pos: usize,
        last: Option<&LastFound>,
    ) -> Result<bool, Found> {
        let t = &self.trie;
        let Some((&first, rest)) = bytes.get(pos..).and_then(<[u8]>::split_first) else {
            return Ok(true);
        };
        let node = t.root[usize::from(first)];
        if node == 0 {
            return Ok(true);
        }
        if let Some(&next) = rest.first()
            && !t.follows(first, next)
        {
            return Ok(t
                .nodes
                .get(node as usize)
                .is_none_or(|n| n.opener == NO_OPENER));
        }
        // What `at` walks after the same checks, from the root's child (not asked again).
        // The arm for `last` is `walk_after`'s body kept inline: calling it cost prose 0.7 %
        // and a flood of `<|end|>x` 4.8 % more (session 41).
        let found = match last {
            Some(last) => {
                let i = last.get();
                let found = match self.last_at(bytes, pos, i) {
                    Some((_, true, _)) => return Err(Found::At(i as usize)),
                    Some((node, false, rest)) => self.walk_on(node, rest, false),
                    None => self.walk_on(node, rest, false),
                };
                if let Found::At(j) = found
                    && j as u32 != i
                {
                    last.set(u32::try_from(j).unwrap_or(NO_OPENER));
                }
                found
            }
            None => self.walk_on(node, rest, false),
        };
        match found {
            Found::No => Ok(true),
            found => Err(found),
        }
    }

    /// [`Openers::at`] whose walk tries opener `last` first (the one found last, kept by the
    /// caller, any value at first; the opener found is kept there): `step_text`'s lookup
    /// where no `plain_stop` walk found the opener before, at a line start or after a
    /// declined opener (a flood of `<|eot|>\n` walked ~300 instructions a unit under `<|`,
    /// one of harmony's header `<|start|>assistant<|channel|>commentary to=` ~260 more). The
    /// root lookup and follow set as in `at`, inlined (prose's stops end there), the rest
    /// out of line ([`Openers::walk_after`]): `step_text`'s only lookup (used at line
    /// starts only, beside `at`'s inlined walk elsewhere, it cost prose 1.8 % and that flood
    /// 2.5 % more).
    #[inline(always)]
    pub(crate) fn at_after(
        &self,
        bytes: &[u8],
        pos: usize,
        is_final: bool,
        last: &LastFound,
    ) -> Found {
        match self.first_step(bytes, pos) {
            Ok((node, rest)) => self.walk_after(node, rest, bytes, pos, is_final, last),
            Err(found) => found,
        }
    }

    /// The walk of [`Openers::at_after`] from the root's child `node` (reached by
    /// `bytes[pos]`, `rest` after it): where the text of opener `last` is at `pos`, on from
    /// its node (at a leaf, it ends there), else from `node`. The walk itself is
    /// [`Openers::walk_on`]'s (a second inlined caller of `walk` outlined it from `step_text`).
    #[inline(never)]
    fn walk_after(
        &self,
        node: u32,
        rest: &[u8],
        bytes: &[u8],
        pos: usize,
        is_final: bool,
        last: &LastFound,
    ) -> Found {
        let i = last.get();
        let found = match self.last_at(bytes, pos, i) {
            Some((_, true, _)) => return Found::At(i as usize),
            Some((node, false, rest)) => self.walk_on(node, rest, is_final),
            None => self.walk_on(node, rest, is_final),
        };
        if let Found::At(j) = found
            && j as u32 != i
        {
            last.set(u32::try_from(j).unwrap_or(NO_OPENER));
        }
        found
    }

    /// How many bytes of opener `i` after its first the text scan reads as ordinary text
    /// whatever surrounds them: none is a byte the scan reads as markup of itself (newline,
    /// backtick, bracket, parenthesis; but a run of exactly three backticks inside a line,
    /// which the scan steps over as text) and no opener may start at any of them (`|start|`
    /// of `<|start|>`, `function_calls` of `<function_calls>`, whose `f` starts no opener
    /// there). Once the
    /// region is declined they are passed over with its first byte.
    #[inline]
    pub(crate) fn inert(&self, i: usize) -> usize {
        self.inert.get(i).map_or(0, |&n| usize::from(n))
    }

    /// How many bytes of a copy of opener `i` at `pos` (its text there) the text scan reads
    /// as ordinary text once its region is declined, from the first on, short of its last:
    /// past its [`Openers::inert`] bytes, each byte that is no stop, or a stop that means
    /// nothing of itself (no newline, backtick, bracket or parenthesis) where no opener
    /// starts even with more bytes to come ([`Trie::tail`] over the text's bytes from there,
    /// then, where they lead into the trie, the bytes after the copy). What the scan's
    /// `plain_stop` answers there, without its lookup from the root and `last_found`'s
    /// compare: `>>>`'s second `>` in a flood of `>>>0>>>1…` cost ~100 instructions a copy.
    /// The last byte is left to the caller's lookup, whose follow set of the byte after it
    /// decides most (`]` of `[TOOL_CALLS]0…`).
    #[inline(always)]
    pub(crate) fn copy_passed(&self, bytes: &[u8], pos: usize, i: usize) -> usize {
        self.copy_passed_found(bytes, pos, i).0
    }

    /// [`Openers::copy_passed`], and the opener the lookup finds where the passed bytes end
    /// when that is what ended them (`NO_OPENER`, `u32::MAX`: not known; not an `Option`,
    /// which cost a flood of `[TOOL_CALLS]{#}` ~2 %). The walk of the copy's bytes there
    /// is the lookup's own (the trie from the root over the copy's bytes from there, then
    /// the bytes after it), so the caller need not look again: each copy of `>>>` in a flood
    /// of `>>>>{w}` found the next one so, and the declined walk looked it up again (~100
    /// instructions a copy).
    #[inline(always)]
    pub(crate) fn copy_passed_found(&self, bytes: &[u8], pos: usize, i: usize) -> (usize, u32) {
        let Some(&CopyPass { from, to, len, all }) = self.copy_pass.get(i) else {
            return (1, NO_OPENER);
        };
        if from == to {
            return (all as usize, NO_OPENER);
        }
        let checks = self
            .copy_checks
            .get(from as usize..to as usize)
            .unwrap_or(&[]);
        let after = bytes.get(pos + len as usize..).unwrap_or(&[]);
        for &(k, node) in checks {
            let found = if node == TAIL_OPENER {
                Found::Wait
            } else {
                self.found_after(node, after)
            };
            match found {
                Found::No => {}
                Found::At(j) => return (k as usize, u32::try_from(j).unwrap_or(NO_OPENER)),
                Found::Wait => return (k as usize, NO_OPENER),
            }
        }
        (all as usize, NO_OPENER)
    }

    /// What the walk from trie node `node` (where no opener ends) over `after` finds, with
    /// more bytes to come: the node's first step inline (the first byte of its chain, or
    /// its children), which decides most (`>>0` of `>>>0>>>1…`), then
    /// [`Openers::walk_on`] (calling it for every copy cost ~40 instructions).
    #[inline(always)]
    fn found_after(&self, node: u32, after: &[u8]) -> Found {
        let (Some(n), Some(&b)) = (self.trie.nodes.get(node as usize), after.first()) else {
            return Found::Wait;
        };
        let goes_on = match n.skip.first() {
            Some(&s) => s == b,
            None => self.trie.child(n, b) != 0,
        };
        if !goes_on {
            return Found::No;
        }
        // The node's chain leads whole to a leaf where an opener ends (`>>` then `>` of
        // `>>>>`): that opener, without the walk (~70 instructions a copy of `>>>>{w}`).
        if !n.skip.is_empty()
            && after
                .get(..n.skip.len())
                .is_some_and(|head| same_bytes(head, n.skip))
            && let Some(m) = self.trie.nodes.get(n.skip_to as usize)
            && m.opener != NO_OPENER
            && m.start == m.end
        {
            return Found::At(m.opener as usize);
        }
        self.walk_on(node, after, false)
    }

    /// The first position from `from` up to `to` (inclusive) where opener `i` is not the
    /// longest opener, whatever more input comes (`to + 1` when it is at every one): where
    /// its text is not there, or a longer opener may go on from it (its trie node is not a
    /// leaf, and the byte after it, absent or present, is one of the node's children). What
    /// [`Openers::at`] answers other than `Found::At(i)` to, by one compare a position
    /// instead of the walk.
    pub(crate) fn longest_until(&self, bytes: &[u8], from: usize, to: usize, i: usize) -> usize {
        let mut j = from;
        while j <= to && self.longest_at(bytes, j, i) {
            j += 1;
        }
        j
    }

    /// Whether opener `i` is the longest opener at `pos` whatever more input comes (what
    /// [`Openers::at`] answers `Found::At(i)` to there): its text is there, and no longer
    /// opener may go on from it (its trie node is a leaf, or the byte after it is present
    /// and none of the node's children). One compare instead of the walk.
    #[inline(always)]
    pub(crate) fn longest_at(&self, bytes: &[u8], pos: usize, i: usize) -> bool {
        let Some(&(text, node, leaf)) = self.ends.get(i) else {
            return false;
        };
        let Some(rest) = bytes.get(pos..) else {
            return false;
        };
        !text.is_empty()
            && rest
                .get(..text.len())
                .is_some_and(|head| same_bytes(head, text))
            && (leaf
                || match (self.trie.nodes.get(node as usize), rest.get(text.len())) {
                    (Some(n), Some(&next)) => self.trie.child(n, next) == 0,
                    _ => false,
                })
    }

    /// The longest opener starting at `bytes[pos]`; `Wait` while a longer one could still
    /// match (decisions never depend on where the input was split).
    #[inline]
    pub(crate) fn at(&self, bytes: &[u8], pos: usize, is_final: bool) -> Found {
        match self.first_step(bytes, pos) {
            Ok((node, rest)) => self.walk(node, rest, is_final),
            Err(found) => found,
        }
    }

    /// The first step of [`Openers::at`] and [`Openers::at_after`], inlined in both (prose's
    /// stops end here): the root's child by `bytes[pos]` and the follow set of the byte
    /// after. `Err` is the answer (no opener, or a one-byte one no opener goes on from);
    /// `Ok` the node to walk on from and the bytes after `bytes[pos]`.
    #[inline(always)]
    fn first_step<'b>(&self, bytes: &'b [u8], pos: usize) -> Result<(u32, &'b [u8]), Found> {
        let t = &self.trie;
        let Some((&first, rest)) = bytes.get(pos..).and_then(<[u8]>::split_first) else {
            return Err(Found::No);
        };
        let node = t.root[usize::from(first)];
        if node == 0 {
            return Err(Found::No);
        }
        if let Some(&next) = rest.first()
            && !t.follows(first, next)
        {
            // No opener goes on from `first` with `next`: at most a one-byte one is here.
            return Err(match t.nodes.get(node as usize) {
                Some(n) if n.opener != NO_OPENER => Found::At(n.opener as usize),
                _ => Found::No,
            });
        }
        Ok((node, rest))
    }

    /// The walk of [`Openers::at`] from trie node `node` on (reached by the bytes before
    /// `rest`, none of whose openers is longer than those the walk finds on).
    #[inline(always)]
    fn walk(&self, mut node: u32, mut rest: &[u8], is_final: bool) -> Found {
        let t = &self.trie;
        let mut best = NO_OPENER;
        // Node 0 is the root, reached again only as "no such child": the walk ends there.
        while node != 0 {
            let Some(n) = t.nodes.get(node as usize) else {
                break;
            };
            if n.opener != NO_OPENER {
                best = n.opener;
            }
            if !n.skip.is_empty() {
                // A chain of single children with no opener on the way: its bytes are
                // compared at once instead of walked node by node.
                let s = n.skip;
                match (rest.get(..s.len()), rest.get(s.len()..)) {
                    (Some(head), Some(more)) => {
                        if !same_bytes(head, s) {
                            break;
                        }
                        rest = more;
                        node = n.skip_to;
                        continue;
                    }
                    // The bytes ran out inside the chain: wait until it is decided.
                    _ => {
                        if !is_final && s.get(..rest.len()).is_some_and(|p| same_bytes(rest, p)) {
                            return Found::Wait;
                        }
                        break;
                    }
                }
            }
            if n.start == n.end {
                break;
            }
            let Some((&b, more)) = rest.split_first() else {
                // The bytes ran out inside the trie: a longer opener may still follow;
                // wait until it is decided (at the end, the longest complete one).
                if !is_final {
                    return Found::Wait;
                }
                break;
            };
            rest = more;
            node = t.child(n, b);
        }
        if best == NO_OPENER {
            Found::No
        } else {
            Found::At(best as usize)
        }
    }

    /// The trie node of opener `last` and the bytes after its text, where its text is at
    /// `pos`, and whether the node is a leaf (`None`: it is not, or no such opener): the
    /// walk of [`Openers::at`] there passes through that node with those bytes left, so it
    /// may go on from there ([`Openers::walk_on`]; at a leaf, it ends there), its bytes one compare instead of a walk (under `<|`, a binary
    /// search among dozens of children, then the token's bytes: ~280 instructions a
    /// `<|start|>` of a flood, ~354 a `<|end|>`).
    #[inline(always)]
    fn last_at<'b>(&self, bytes: &'b [u8], pos: usize, last: u32) -> Option<(u32, bool, &'b [u8])> {
        let &(text, node, leaf) = self.ends.get(last as usize)?;
        let end = pos + text.len();
        let here = !text.is_empty() && bytes.get(pos..end).is_some_and(|h| same_bytes(h, text));
        here.then(|| (node, leaf, bytes.get(end..).unwrap_or(&[])))
    }

    /// [`Openers::walk`], not inlined: the one copy of the walk that the text scan
    /// (`none_at`) and `step_text` ([`Openers::at_after`]) call (with a second inlined copy
    /// `step_text` called `at` out of line: ~2 M instructions more in a 128 KB flood of `>>>`).
    #[inline(never)]
    fn walk_on(&self, node: u32, rest: &[u8], is_final: bool) -> Found {
        self.walk(node, rest, is_final)
    }
}

/// Whether `a` and `b`, of one length, hold the same bytes: the first compared alone (prose
/// rarely matches past it), then by words (eight bytes, or two overlapping four-byte halves
/// of a run of four to seven) and a byte loop for the last few of a short one: a `memcmp`
/// call costs more than a skip of the opener trie (`<|start|>assistant<|channel|>` walks
/// three such runs).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() || a.first() != b.first() {
        return false;
    }
    let n = a.len();
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if word8(a, i) != word8(b, i) {
                return false;
            }
            i += 8;
        }
        return word8(a, n - 8) == word8(b, n - 8);
    }
    if n >= 4 {
        return word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4);
    }
    // Two or three bytes: the last two (the first is compared), one word compare instead
    // of a byte loop (a lookup at each `>` of `>>>0>>>1…` compared three, ~12
    // instructions in the loop).
    n < 2 || word2(a, n - 2) == word2(b, n - 2)
}

/// The two bytes of `s` from `i` as a word (0 past the end: never asked for).
#[inline]
fn word2(s: &[u8], i: usize) -> u16 {
    s.get(i..i + 2)
        .and_then(|w| <[u8; 2]>::try_from(w).ok())
        .map_or(0, u16::from_le_bytes)
}

/// The eight bytes of `s` from `i` as a word (0 past the end: never asked for).
#[inline]
fn word8(s: &[u8], i: usize) -> u64 {
    s.get(i..i + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// The four bytes of `s` from `i` as a word (0 past the end: never asked for).
#[inline]
fn word4(s: &[u8], i: usize) -> u32 {
    s.get(i..i + 4)
        .and_then(|w| <[u8; 4]>::try_from(w).ok())
        .map_or(0, u32::from_le_bytes)
}

/// [`Openers::copy_passed_found`] of one opener: its checks `copy_checks[from..to]`, its
/// length, and the bytes passed when every check passes.
#[derive(Debug, Clone, Copy)]
struct CopyPass {
    from: u32,
    to: u32,
    len: u32,
    all: u32,
}

/// [`TrieNode::opener`] of a node where no opener ends.
const NO_OPENER: u32 = u32::MAX;
/// [`Trie::tail`]: no opener starts there, whatever follows.
const TAIL_NO: u32 = 0;
/// [`Trie::tail`]: an opener ends within the bytes.
const TAIL_OPENER: u32 = u32::MAX;

/// The openers' bytes as a trie: node 0 is the root; each node's children are a sorted
/// run of `edges` (few, except under `<|`, where a binary search finds the byte).
#[derive(Debug, Clone)]
struct Trie {
    /// Per node: its edges `edges[start..end]`, and the opener ending there (`usize::MAX`:
    /// none).
    nodes: Vec<TrieNode>,
    /// `(byte, child)`, each node's run sorted by byte.
    edges: Vec<(u8, u32)>,
    /// The root's children by byte (0: none), the one lookup every stop makes.
    root: [u32; 256],
    /// Per first byte, the bytes that follow it in some opener (a bit set): a stop whose
    /// next byte goes on no opener is decided without a walk (a flood of `[`, `<` in
    /// prose).
    follow: [[u64; 4]; 256],
    /// Per wide node (more than [`LINEAR_EDGES`] children: `<`, `<|`; its `skip_to` the
    /// index here), its edge by byte: 1 + the edge's offset in the node's run (0: none).
    /// A binary search of `<`'s twelve and `<|`'s twelve cost a walk of a special token ~90
    /// instructions, and a flood of them walks each token three or four times
    /// (`<|eom|>]<|tool_call_begin|>{#}` 21.1x prose). Bytes, not nodes, and in place: the
    /// table is built in the first parse (as a `Vec` of `u32` nodes, prose's cost 0.19 %
    /// more; of bytes, 0.09 %). Wide nodes past the first [`WIDE_TABLES`] are searched.
    wide: [[u8; 256]; WIDE_TABLES],
}

/// The most children a node's edges are read one by one for ([`Trie::child`]).
const LINEAR_EDGES: usize = 8;
/// The wide nodes with a table ([`Trie::wide`]): `<` and `<|`, the only two.
const WIDE_TABLES: usize = 2;

impl Trie {
    /// Whether some opener starting with `first` goes on with `next`.
    #[inline]
    fn follows(&self, first: u8, next: u8) -> bool {
        self.follow[usize::from(first)][usize::from(next >> 6)] >> (next & 63) & 1 != 0
    }
}

#[derive(Debug, Clone, Copy)]
struct TrieNode {
    start: u32,
    end: u32,
    opener: u32,
    /// Where the node has one child and its subtree goes on as a chain of single children
    /// with no opener on the way: the chain's bytes after this node, down to the first node
    /// that branches or ends an opener (`skip_to`), compared at once (empty: none). A
    /// flood's opener costs one compare past its first distinct byte, and the long shared
    /// starts of harmony's markers (`<|start|>assistant<|channel|>`) a compare a run, not
    /// a node a byte.
    skip: &'static [u8],
    /// The node that `skip` leads to; of a wide node, its index in [`Trie::wide`].
    skip_to: u32,
}

impl Trie {
    /// The child of `n` by byte `b` (0: none). Runs are sorted: a short one is read up to
    /// the first edge at or past `b`, a long one (under `<|`) binary searched.
    #[inline]
    fn child(&self, n: &TrieNode, b: u8) -> u32 {
        let edges = self
            .edges
            .get(n.start as usize..n.end as usize)
            .unwrap_or(&[]);
        if edges.len() <= LINEAR_EDGES {
            for &(e, c) in edges {
                if e >= b {
                    return if e == b { c } else { 0 };
                }
            }
            0
        } else if let Some(t) = self.wide.get(n.skip_to as usize) {
            edges
                .get(usize::from(t[usize::from(b)]).wrapping_sub(1))
                .map_or(0, |e| e.1)
        } else {
            edges
                .binary_search_by_key(&b, |e| e.0)
                .ok()
                .and_then(|i| edges.get(i))
                .map_or(0, |e| e.1)
        }
    }

    /// Where the opener lookup at the start of `bytes` (known bytes, more may follow them)
    /// stands after them: [`TAIL_NO`] (no opener starts there, whatever follows),
    /// [`TAIL_OPENER`] (one ends within them) or the node they lead to from the root, where
    /// the walk goes on over the bytes after them. Walked when asked (a few bytes of an
    /// opener's text): kept per opener in the table, the build cost every family's small
    /// reply ~0.5 %.
    #[inline]
    fn tail(&self, bytes: &[u8]) -> u32 {
        let Some((&first, rest)) = bytes.split_first() else {
            return TAIL_NO;
        };
        let mut node = self.root[usize::from(first)];
        let mut rest = rest.iter();
        loop {
            let Some(n) = self.nodes.get(node as usize).filter(|_| node != 0) else {
                return TAIL_NO;
            };
            if n.opener != NO_OPENER {
                return TAIL_OPENER;
            }
            match rest.next() {
                Some(&b) => node = self.child(n, b),
                None => return node,
            }
        }
    }

    /// Whether an opener may start at the start of `bytes`, whatever follows them: one ends
    /// within them, or they all go on an opener's path (more bytes may complete it).
    fn may_start(&self, bytes: &[u8]) -> bool {
        let Some((&first, rest)) = bytes.split_first() else {
            return true;
        };
        let mut node = self.root[usize::from(first)];
        for &b in rest {
            if node == 0 {
                return false;
            }
            let Some(n) = self.nodes.get(node as usize) else {
                return false;
            };
            if n.opener != NO_OPENER {
                return true;
            }
            node = self.child(n, b);
        }
        node != 0
    }

    /// The node `text` leads to from the root, byte by byte (`None`: it leaves the trie).
    fn node_of(&self, text: &[u8]) -> Option<u32> {
        let (&first, rest) = text.split_first()?;
        let mut node = self.root[usize::from(first)];
        for &b in rest {
            if node == 0 {
                return None;
            }
            node = self.child(self.nodes.get(node as usize)?, b);
        }
        (node != 0).then_some(node)
    }

    fn new(list: &[Opener]) -> Self {
        // Built as maps first, then flattened into sorted edge runs.
        let mut children: Vec<std::collections::BTreeMap<u8, usize>> = vec![Default::default()];
        let mut ends = vec![usize::MAX];
        for (i, o) in list.iter().enumerate() {
            let mut node = 0;
            for &b in o.text.as_bytes() {
                node = match children[node].get(&b) {
                    Some(&n) => n,
                    None => {
                        children.push(Default::default());
                        ends.push(usize::MAX);
                        let n = children.len() - 1;
                        children[node].insert(b, n);
                        n
                    }
                };
            }
            // Texts are distinct (the table merges equal ones); the first keeps it.
            if node != 0 && ends[node] == usize::MAX {
                ends[node] = i;
            }
        }
        let mut depth = vec![0usize; children.len()];
        for (n, c) in children.iter().enumerate() {
            for &child in c.values() {
                depth[child] = depth[n] + 1;
            }
        }
        // Per node, an opener whose text runs through it (the first inserted).
        let mut via = vec![usize::MAX; children.len()];
        for (i, o) in list.iter().enumerate() {
            let mut node = 0;
            for &b in o.text.as_bytes() {
                let Some(&next) = children[node].get(&b) else {
                    break;
                };
                node = next;
                if via[node] == usize::MAX {
                    via[node] = i;
                }
            }
        }
        let mut nodes = Vec::with_capacity(children.len());
        let mut edges = Vec::new();
        let mut wide = [[0u8; 256]; WIDE_TABLES];
        let mut tables = 0;
        for (n, (c, &opener)) in children.iter().zip(&ends).enumerate() {
            let start = u32::try_from(edges.len()).unwrap_or(u32::MAX);
            edges.extend(c.iter().map(|(&b, &n)| (b, u32::try_from(n).unwrap_or(0))));
            let end = u32::try_from(edges.len()).unwrap_or(u32::MAX);
            let opener = u32::try_from(opener).unwrap_or(NO_OPENER);
            // A node (not the root) with one child: follow single children with no opener
            // to the first node that branches, ends an opener or is a leaf.
            let mut to = match (n, c.len()) {
                (1.., 1) => c.values().next().copied(),
                _ => None,
            };
            while let Some(t) = to
                && ends[t] == usize::MAX
                && children[t].len() == 1
            {
                to = children[t].values().next().copied();
            }
            let skip = to.and_then(|t| {
                let text = list.get(*via.get(t)?)?.text.as_bytes();
                Some((text.get(depth[n]..depth[t])?, u32::try_from(t).ok()?))
            });
            let mut skip_to = skip.map_or(0, |(_, t)| t);
            if c.len() > LINEAR_EDGES {
                // No table (searched): `skip_to` past them.
                skip_to = u32::MAX;
                if c.len() < 256
                    && let Some(by_byte) = wide.get_mut(tables)
                {
                    // Runs are sorted by byte, as the map's keys: the k-th key's edge.
                    for (k, &b) in c.keys().enumerate() {
                        by_byte[usize::from(b)] = u8::try_from(k + 1).unwrap_or(0);
                    }
                    skip_to = u32::try_from(tables).unwrap_or(u32::MAX);
                    tables += 1;
                }
            }
            nodes.push(TrieNode {
                start,
                end,
                opener,
                skip: skip.map_or(&[][..], |(s, _)| s),
                skip_to,
            });
        }
        let mut root = [0u32; 256];
        let mut follow = [[0u64; 4]; 256];
        for (&b, &n) in &children[0] {
            root[usize::from(b)] = u32::try_from(n).unwrap_or(0);
            for &next in children[n].keys() {
                follow[usize::from(b)][usize::from(next >> 6)] |= 1 << (next & 63);
            }
        }
        Trie {
            nodes,
            edges,
            root,
            follow,
            wide,
        }
    }
}

/// Every literal that starts markup in auto mode (region openers, reasoning markers,
/// control tokens, line-start openers), each once, in the table's order: what an
/// adversarial input repeats to check that no opener costs more than linear time
/// (`toolcall-bench`'s opener floods derive their list from it).
pub fn markup_openers() -> Vec<&'static str> {
    let all: Vec<FormatId> = FormatId::all().collect();
    let table = Openers::cached(&all, false, false);
    let mut out: Vec<&'static str> = table.list.iter().map(|o| o.text).collect();
    for o in &table.line {
        if !out.contains(&o.text) {
            out.push(o.text);
        }
    }
    out
}

/// Bytes at which the text scan must look closer: the fixed markup bytes (newline, fence,
/// brackets, call parenthesis) plus the first byte of every opener.
///
/// [`StopSet::scan`] takes the stops of 64 bytes at a time as a bit mask: the exact
/// position of each is its bit's index, and the scan goes on past a stop that opens
/// nothing without searching those bytes again. The corpus's prose has a stop every ~40
/// bytes (`f` and `A` start openers in auto mode); the portable form (any stop in a
/// 32-byte block, then a table loop for the byte) spent ~312 instructions a stop, ~11.6 a
/// byte of prose. On x86_64 the mask is built with SIMD compares (LLVM did not turn the
/// portable loop into `pmovmskb`): AVX2 when the CPU has it (checked once per set), else
/// SSE2, which every x86_64 CPU has (its two-operand compares cost a copy each: ~1.8
/// instructions a byte against AVX2's ~0.7). Other targets keep the portable block test.
///
/// An opener first byte that means nothing of itself (not a fixed byte), starts no
/// one-byte opener and has at most two second bytes among the openers (auto mode's `f`,
/// `A`, `>`, `]`) is a *pair* key: the compares count it only where the next byte is one
/// of its openers' second bytes (the next byte loaded one further on, so the mask is
/// built from a 65-byte window; a last byte of the input, whose next byte is not there
/// yet, still stops). Elsewhere the text scan reads such a byte as an ordinary one
/// ([`Openers::none_at`] answers `Ok(true)` there), so the pair test only drops stops
/// the scan would pass over: the `f` and `A` of words, ~28 k stops a MB of prose, whose
/// mispredicted branches held the AVX2 scan to 0.73-0.78x serde_json's wall time.
/// Measured with `bench_profile "prose/1 MB" one` under callgrind and `bench_table`:
/// BENCHMARKS.md "Prose against serde_json, session 38".
#[derive(Debug, Clone)]
pub(crate) struct StopSet {
    table: [bool; 256],
    /// The fixed bytes, then the opener first bytes outside them that are not pair keys
    /// (at most two, the rest padded with `\n`, already a stop).
    keys: [u8; 8],
    /// The pair keys: first byte and one second byte each (a key with two second bytes
    /// takes two), padded with `\n\n` (a stop already).
    pairs: [[u8; 2]; 4],
    /// The extra bytes do not fit the compares: the blocks are tested with the table.
    many: bool,
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
}

const FIXED: [u8; 6] = [b'\n', b'`', b'<', b'[', b'{', b'('];

/// The bytes a 64-byte block's mask is built from: the block and the byte after it.
type Window = [u8; 65];

impl StopSet {
    /// The set for openers with these texts.
    fn new<'a>(texts: impl Iterator<Item = &'a [u8]> + Clone) -> Self {
        let mut table = [false; 256];
        for b in FIXED {
            table[usize::from(b)] = true;
        }
        let mut keys = [b'\n'; 8];
        keys[..FIXED.len()].copy_from_slice(&FIXED);
        let mut n = FIXED.len();
        let mut pairs = [[b'\n'; 2]; 4];
        let mut np = 0;
        let mut many = false;
        for t in texts.clone() {
            let Some(&b) = t.first() else { continue };
            if table[usize::from(b)] {
                continue;
            }
            table[usize::from(b)] = true;
            // The second bytes of every opener starting with `b` (`None`: one is `b` alone).
            let mut seconds: Vec<u8> = Vec::new();
            let mut single = false;
            for u in texts.clone().filter(|u| u.first() == Some(&b)) {
                match u.get(1) {
                    Some(&s) => {
                        if !seconds.contains(&s) {
                            seconds.push(s);
                        }
                    }
                    None => single = true,
                }
            }
            if !single && seconds.len() <= 2 && np + seconds.len() <= pairs.len() {
                for s in seconds {
                    pairs[np] = [b, s];
                    np += 1;
                }
            } else if let Some(slot) = keys.get_mut(n) {
                *slot = b;
                n += 1;
            } else {
                many = true;
            }
        }
        StopSet {
            table,
            keys,
            pairs,
            many,
            #[cfg(target_arch = "x86_64")]
            avx2: std::arch::is_x86_feature_detected!("avx2"),
        }
    }

    pub(crate) fn is_stop(&self, b: u8) -> bool {
        self.table[usize::from(b)]
    }

    /// The first stop at or after `from` in `bytes` that `plain` does not pass over
    /// (`plain(i)`: the stop at `i` is an ordinary byte there), else `bytes.len()`.
    /// A pair key whose next byte is none of its second bytes may be passed over without
    /// asking `plain`: `plain` must answer true there.
    #[inline]
    pub(crate) fn scan(
        &self,
        bytes: &[u8],
        from: usize,
        mut plain: impl FnMut(usize) -> bool,
    ) -> usize {
        // A few bytes (most pushes of a stream in small pieces): the table, byte by byte,
        // costs less than setting up the block compares.
        const SHORT: usize = 16;
        if bytes.len().saturating_sub(from) < SHORT {
            let mut at = from;
            while let Some(k) = bytes
                .get(at..)
                .and_then(|r| r.iter().position(|&b| self.table[usize::from(b)]))
            {
                if !plain(at + k) {
                    return at + k;
                }
                at += k + 1;
            }
            return bytes.len();
        }
        #[cfg(target_arch = "x86_64")]
        if !self.many {
            if self.avx2 {
                // SAFETY: the CPU has AVX2 (`is_x86_feature_detected!` when the set was
                // built).
                return unsafe { self.scan_avx2(bytes, from, plain) };
            }
            return scan_blocks(bytes, from, plain, |w| self.mask_sse2(w), &self.table);
        }
        scan_blocks(bytes, from, plain, |w| self.mask_portable(w), &self.table)
    }

    /// [`StopSet::scan`] with 32-byte compares; the keys stay in registers for the whole
    /// scan.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn scan_avx2(
        &self,
        bytes: &[u8],
        from: usize,
        plain: impl FnMut(usize) -> bool,
    ) -> usize {
        use std::arch::x86_64::{
            __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
            _mm256_or_si256, _mm256_set1_epi8,
        };
        // Written out: `array::map` over the pairs was not inlined (~120 instructions a
        // scan, ~2 M in 1 MB of prose pushed 64 bytes at a time).
        let s = |b: u8| _mm256_set1_epi8(b as i8);
        let [k0, k1, k2, k3, k4, k5, k6, k7] = self.keys;
        let keys: [__m256i; 8] = [s(k0), s(k1), s(k2), s(k3), s(k4), s(k5), s(k6), s(k7)];
        let [[a0, b0], [a1, b1], [a2, b2], [a3, b3]] = self.pairs;
        let pairs: [[__m256i; 2]; 4] = [
            [s(a0), s(b0)],
            [s(a1), s(b1)],
            [s(a2), s(b2)],
            [s(a3), s(b3)],
        ];
        let mask = |w: &Window| -> u64 {
            let mut m = 0;
            for i in 0..2 {
                // SAFETY: `w` holds 65 bytes; these loads read bytes `32 i .. 32 i + 32` and
                // `32 i + 1 .. 32 i + 33` (at most 65); they need no alignment.
                let (v, next) = unsafe {
                    let p = w.as_ptr().add(32 * i);
                    (
                        _mm256_loadu_si256(p.cast()),
                        _mm256_loadu_si256(p.add(1).cast()),
                    )
                };
                let mut hit = _mm256_cmpeq_epi8(v, keys[0]);
                for &k in &keys[1..] {
                    hit = _mm256_or_si256(hit, _mm256_cmpeq_epi8(v, k));
                }
                for [a, b] in pairs {
                    let pair =
                        _mm256_and_si256(_mm256_cmpeq_epi8(v, a), _mm256_cmpeq_epi8(next, b));
                    hit = _mm256_or_si256(hit, pair);
                }
                // The sign bits of the 32 bytes.
                m |= u64::from(_mm256_movemask_epi8(hit) as u32) << (32 * i);
            }
            m
        };
        scan_blocks(bytes, from, plain, mask, &self.table)
    }

    /// The stops of a 64-byte block as a bit mask, 16 bytes per SSE2 compare.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn mask_sse2(&self, w: &Window) -> u64 {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        // SAFETY: SSE2, the only feature these intrinsics need, is part of every x86_64
        // target; the loads read bytes `16 i .. 16 i + 16` and `16 i + 1 .. 16 i + 17` of
        // the 65 of `w` (no alignment needed).
        unsafe {
            let s = |b: u8| _mm_set1_epi8(b as i8);
            let [k0, k1, k2, k3, k4, k5, k6, k7] = self.keys;
            let keys = [s(k0), s(k1), s(k2), s(k3), s(k4), s(k5), s(k6), s(k7)];
            let [[a0, b0], [a1, b1], [a2, b2], [a3, b3]] = self.pairs;
            let pairs = [
                [s(a0), s(b0)],
                [s(a1), s(b1)],
                [s(a2), s(b2)],
                [s(a3), s(b3)],
            ];
            let mut m = 0;
            for i in 0..4 {
                let p = w.as_ptr().add(16 * i);
                let v = _mm_loadu_si128(p.cast());
                let next = _mm_loadu_si128(p.add(1).cast());
                let mut hit = _mm_cmpeq_epi8(v, keys[0]);
                for &k in &keys[1..] {
                    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, k));
                }
                for [a, b] in pairs {
                    let pair = _mm_and_si128(_mm_cmpeq_epi8(v, a), _mm_cmpeq_epi8(next, b));
                    hit = _mm_or_si128(hit, pair);
                }
                // The sign bits of the 16 bytes.
                m |= u64::from(_mm_movemask_epi8(hit) as u16) << (16 * i);
            }
            m
        }
    }

    /// The stops of a 64-byte block as a bit mask: a branch-free test for any (which the
    /// compiler vectorises), then the table (pair keys counted whatever follows them).
    #[inline]
    fn mask_portable(&self, w: &Window) -> u64 {
        let block = &w[..64];
        if !self.many {
            let [k0, k1, k2, k3, k4, k5, k6, k7] = self.keys;
            let [[p0, _], [p1, _], [p2, _], [p3, _]] = self.pairs;
            let mut hit = 0u8;
            for &b in block {
                hit |= u8::from(b == k0)
                    | u8::from(b == k1)
                    | u8::from(b == k2)
                    | u8::from(b == k3)
                    | u8::from(b == k4)
                    | u8::from(b == k5)
                    | u8::from(b == k6)
                    | u8::from(b == k7)
                    | u8::from(b == p0)
                    | u8::from(b == p1)
                    | u8::from(b == p2)
                    | u8::from(b == p3);
            }
            if hit == 0 {
                return 0;
            }
        }
        table_mask(block, &self.table)
    }
}

/// The stops of up to 64 bytes as a bit mask, by the table.
#[inline]
fn table_mask(s: &[u8], table: &[bool; 256]) -> u64 {
    let mut m = 0u64;
    for (i, &b) in s.iter().take(64).enumerate() {
        m |= u64::from(table[usize::from(b)]) << i;
    }
    m
}

/// The scan of [`StopSet::scan`] with `mask` for whole 64-byte blocks, each with the byte
/// after it; the last bytes are the 65 ending at the end of `bytes` with the bits before
/// `base` shifted out (most pushes of a stream are short) and the last byte, whose next
/// byte is not there yet, by the table; or, when `bytes` is shorter, the rest copied into a
/// window.
#[inline(always)]
fn scan_blocks(
    bytes: &[u8],
    from: usize,
    mut plain: impl FnMut(usize) -> bool,
    mask: impl Fn(&Window) -> u64,
    table: &[bool; 256],
) -> usize {
    let len = bytes.len();
    let mut base = from;
    while base < len {
        let mut m = match bytes.get(base..).and_then(<[u8]>::first_chunk::<65>) {
            Some(w) => mask(w),
            None => match (bytes.last_chunk::<65>(), bytes.last()) {
                // `len - 65 < base < len`: the window's bits (positions `len - 65 ..
                // len - 1`) shifted by 1 to 64, then the last byte's own.
                (Some(w), Some(&last)) => {
                    let shift = (base + 65 - len) as u32;
                    mask(w).checked_shr(shift).unwrap_or(0)
                        | u64::from(table[usize::from(last)]) << (64 - shift)
                }
                // Under 65 bytes in all (a short push of a stream): copied into a window
                // after zeros (no key) and cut to its length.
                _ => match bytes.get(base..) {
                    Some(rest @ [.., last]) if rest.len() <= 64 => {
                        let n = rest.len();
                        let mut w = [0u8; 65];
                        w[..n].copy_from_slice(rest);
                        (mask(&w) & (u64::MAX >> (64 - n)))
                            | u64::from(table[usize::from(*last)]) << (n - 1)
                    }
                    _ => table_mask(bytes.get(base..).unwrap_or(&[]), table),
                },
            },
        };
        while m != 0 {
            let i = base + m.trailing_zeros() as usize;
            if !plain(i) {
                return i;
            }
            m &= m - 1;
        }
        base += 64;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Xorshift;

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
    fn a_backtick_run_inside_a_line_is_inert_and_a_fence_is_not() {
        let all: Vec<FormatId> = FormatId::all().collect();
        let o = Openers::build(&all, false, false);
        let inert = |text: &str| {
            let i = o.list.iter().position(|x| x.text == text);
            i.map(|i| o.inert(i))
        };
        // `ction: ```json`: the run of three follows `Action: ` on its line.
        assert_eq!(inert("Action: ```json"), Some(14));
        // `ction:`: the newline (and the fence at the line start after it) stop it.
        assert_eq!(inert("Action:\n```json"), Some(6));
    }

    /// The longest opener at `pos` by comparing every opener (what the trie replaced).
    fn at_by_comparison(o: &Openers, bytes: &[u8], pos: usize, is_final: bool) -> Found {
        let rest = bytes.get(pos..).unwrap_or(&[]);
        if rest.is_empty() {
            return Found::No;
        }
        let mut best: Option<usize> = None;
        let mut partial = false;
        for (i, op) in o.list.iter().enumerate() {
            let t = op.text.as_bytes();
            if rest.len() >= t.len() {
                if rest.starts_with(t) && best.is_none_or(|j| o.list[j].text.len() < t.len()) {
                    best = Some(i);
                }
            } else if t.starts_with(rest) {
                partial = true;
            }
        }
        if partial && !is_final {
            return Found::Wait;
        }
        best.map_or(Found::No, Found::At)
    }

    // `copy_passed` passes exactly the bytes of a copy after its first, short of its last,
    // that are no stop, or a stop that means nothing of itself where the lookup finds no
    // opener with more to come, up to the first that is not (past the inert bytes, which
    // are passed).
    #[test]
    fn copy_passed_passes_what_the_lookup_passes() {
        let all: Vec<FormatId> = FormatId::all().collect();
        let o = Openers::build(&all, false, false);
        let afters = [
            "",
            "0",
            ">",
            ">>",
            "x",
            "<",
            "|",
            "\n",
            "0>>>1",
            "tool_call>",
            "]",
            "}",
        ];
        let (mut checked, mut found) = (0, 0);
        for i in 0..o.list.len() {
            let text = o.list[i].text;
            for more in o.list.iter().map(|p| p.text).chain(afters) {
                let bytes = format!("{text}{more}");
                let bytes = bytes.as_bytes();
                let (k, at) = o.copy_passed_found(bytes, 0, i);
                // The opener found where the passed bytes end is the lookup's there.
                if at != NO_OPENER {
                    assert_eq!(
                        o.none_at(bytes, k),
                        Err(Found::At(at as usize)),
                        "{text:?} {more:?}"
                    );
                    found += 1;
                }
                let passes = |q: usize| {
                    let b = bytes[q];
                    !o.stops.is_stop(b)
                        || (!matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(')
                            && o.none_at(bytes, q) == Ok(true))
                };
                let inert = 1 + o.inert(i);
                assert!(
                    k >= inert && k <= text.len().max(inert),
                    "{text:?} {more:?}: {k}"
                );
                for q in inert..k {
                    assert!(passes(q), "{text:?} {more:?}: {q}");
                }
                if k >= inert && k + 1 < text.len() {
                    assert!(!passes(k), "{text:?} {more:?}: stopped at {k}");
                }
                checked += k;
            }
        }
        assert!(checked > 1000, "{checked}");
        assert!(found >= 3, "{found}");
    }

    #[test]
    fn same_bytes_is_slice_equality() {
        let mut rng = Xorshift::new(0x4D2E_96A1_07BC_F35D_u64);
        for n in 0..24 {
            for _ in 0..200 {
                let a: Vec<u8> = (0..n).map(|_| b"ab>"[rng.below(3)]).collect();
                let mut b = a.clone();
                if n > 0 && rng.below(2) == 0 {
                    let k = rng.below(n);
                    b[k] = b"ab>"[rng.below(3)];
                }
                assert_eq!(same_bytes(&a, &b), a == b, "{a:?} {b:?}");
                assert!(!same_bytes(&a, &b[..n.saturating_sub(1)]) || n == 0);
            }
        }
    }

    #[test]
    fn trie_finds_what_comparing_every_opener_finds() {
        let all: Vec<FormatId> = FormatId::all().collect();
        for (chosen, reasoning_only) in [(false, false), (true, false), (false, true)] {
            let o = Openers::build(&all, chosen, reasoning_only);
            // Every opener, each of its prefixes, and each followed by every other opener's
            // first bytes, one-shot and with more to come.
            let mut inputs: Vec<Vec<u8>> = Vec::new();
            for a in &o.list {
                let t = a.text.as_bytes();
                for n in 1..=t.len() {
                    inputs.push(t[..n].to_vec());
                    // A prefix, then a byte that leaves the opener there (inside a run of
                    // the trie's single children, where it skips).
                    if let Some(&next) = t.get(n) {
                        let mut v = t[..n].to_vec();
                        v.push(next ^ 1);
                        inputs.push(v);
                    }
                }
                for b in &o.list {
                    let mut v = t.to_vec();
                    v.extend_from_slice(&b.text.as_bytes()[..b.text.len().min(3)]);
                    inputs.push(v);
                    inputs.push(
                        t[..t.len() - 1]
                            .iter()
                            .chain(b.text.as_bytes())
                            .copied()
                            .collect(),
                    );
                }
            }
            inputs.extend([
                b"<b>".to_vec(),
                b"x".to_vec(),
                b"<|".to_vec(),
                vec![0xE2, 0x80],
            ]);
            for v in &inputs {
                for pos in 0..v.len().min(3) {
                    for fin in [false, true] {
                        assert_eq!(
                            o.at(v, pos, fin),
                            at_by_comparison(&o, v, pos, fin),
                            "{:?} at {pos}, final {fin}",
                            String::from_utf8_lossy(v)
                        );
                    }
                }
            }
        }
    }

    // The walk that tries the opener found last first answers what the walk answers (the
    // text scan's `none_at_after`, `step_text`'s `at_after` what `at` answers), with
    // every opener kept as the last (a stale one, one that is a prefix of the opener there,
    // one that the opener there is a prefix of, one at its end with more to come), and
    // keeps the opener it found.
    #[test]
    fn at_after_answers_what_the_walk_answers() {
        let all: Vec<FormatId> = FormatId::all().collect();
        for (chosen, reasoning_only) in [(false, false), (true, false), (false, true)] {
            let o = Openers::build(&all, chosen, reasoning_only);
            let mut inputs: Vec<Vec<u8>> = Vec::new();
            for a in &o.list {
                let t = a.text.as_bytes();
                inputs.push(t.to_vec());
                inputs.push(t[..t.len() - 1].to_vec());
                for tail in [
                    &b"x"[..],
                    b"1,",
                    b" ",
                    b"\n",
                    b"{\"",
                    b"|>",
                    b">",
                    b"<|end|>",
                ] {
                    inputs.push([t, tail].concat());
                }
                for b in &o.list {
                    inputs.push([t, b.text.as_bytes()].concat());
                }
            }
            for v in &inputs {
                // Every opener sharing the first byte (the others fail at it), and none.
                let lasts = (0..o.list.len())
                    .filter(|&i| o.list[i].text.as_bytes().first() == v.first())
                    .map(|i| i as u32)
                    .chain([0, NO_OPENER]);
                for l in lasts {
                    let last = LastFound::new(l);
                    let got = o.none_at_after(v, 0, &last);
                    let what = || format!("{:?} after {l}", String::from_utf8_lossy(v));
                    assert_eq!(got, o.none_at(v, 0), "{}", what());
                    match got {
                        Err(Found::At(i)) => assert_eq!(last.get() as usize, i, "{}", what()),
                        _ => assert_eq!(last.get(), l, "{}", what()),
                    }
                    // `step_text`'s copy answers what `at` answers, at the end or not.
                    for is_final in [false, true] {
                        let last = LastFound::new(l);
                        let got = o.at_after(v, 0, is_final, &last);
                        assert_eq!(got, o.at(v, 0, is_final), "{} final {is_final}", what());
                        match got {
                            Found::At(i) => assert_eq!(last.get() as usize, i, "{}", what()),
                            _ => assert_eq!(last.get(), l, "{}", what()),
                        }
                    }
                }
            }
        }
    }

    // Every way the stop scan builds its masks (AVX2 where the CPU has it, SSE2, the
    // portable block test, the table when the extra bytes do not fit) finds what a byte
    // loop over the table finds, from every start, over block ends and short tails, with
    // stops passed over or not; a pair key whose next byte is none of its second bytes is
    // passed over (as the text scan's `plain` does there), also with the pair split at a
    // block edge or the key the last byte of the text (where it stops).
    #[test]
    fn stop_scan_matches_a_byte_loop() {
        let mut rng = Xorshift::new(0x2545_F491_4F6C_DD1D_u64);
        let sets: [&[&str]; 6] = [
            &[">.", "fu"],
            &[">>>", "Action:", "functools[", "]~"],
            &[">>>", "Ab", "Ac", "fu", "]~"],
            &["f", "fu", ">x", ">y", ">z"],
            &["fu", "gh", "hi", "ij", "jk", "Az", "Ay", "Ax"],
            &["f", "g", "h", "i", "j"],
        ];
        for texts in sets {
            let set = StopSet::new(texts.iter().map(|t| t.as_bytes()));
            let is_pair_key = |b: u8| b != b'\n' && set.pairs.iter().any(|p| p[0] == b);
            for len in [
                0, 1, 5, 15, 16, 17, 40, 63, 64, 65, 66, 100, 128, 129, 130, 200,
            ] {
                for tail in [None, Some(b'f'), Some(b'A'), Some(b'>')] {
                    let mut text: Vec<u8> = (0..len)
                        .map(|_| {
                            let seed = rng.next_u64();
                            // Mostly letters, sometimes a stop byte or a second byte.
                            match seed % 29 {
                                0 => b'(',
                                1 => b'\n',
                                2 | 3 => b'f',
                                4 => b'j',
                                5 | 6 => b'>',
                                7 | 8 => b'A',
                                9 => b'{',
                                10 | 11 => b'u',
                                12 => b'c',
                                13 => b']',
                                14 => b'~',
                                _ => b'a' + (seed >> 8) as u8 % 26,
                            }
                        })
                        .collect();
                    // The last byte a pair key: its next byte is not there yet.
                    if let (Some(t), Some(last)) = (tail, text.last_mut()) {
                        *last = t;
                    }
                    // A pair split at each block edge, sometimes.
                    if tail == Some(b'A') {
                        for edge in [63, 64, 127, 128] {
                            if edge + 1 < text.len() {
                                text[edge] = b'f';
                                text[edge + 1] = b'u';
                            }
                        }
                    }
                    let filtered = |i: usize| {
                        is_pair_key(text[i])
                            && text
                                .get(i + 1)
                                .is_some_and(|&n| !set.pairs.contains(&[text[i], n]))
                    };
                    for from in 0..=len {
                        for skip in [0usize, 2, 3] {
                            let plain =
                                |i: usize| filtered(i) || (skip != 0 && i.is_multiple_of(skip));
                            let want = (from..len)
                                .find(|&i| set.is_stop(text[i]) && !plain(i))
                                .unwrap_or(len);
                            let mut got = vec![set.scan(&text, from, plain)];
                            let table = &set.table;
                            got.push(scan_blocks(
                                &text,
                                from,
                                plain,
                                |w| set.mask_portable(w),
                                table,
                            ));
                            // The compares hold the keys that fit only.
                            #[cfg(target_arch = "x86_64")]
                            if !set.many {
                                got.push(scan_blocks(
                                    &text,
                                    from,
                                    plain,
                                    |w| set.mask_sse2(w),
                                    table,
                                ));
                                if set.avx2 {
                                    // SAFETY: the CPU has AVX2.
                                    got.push(unsafe { set.scan_avx2(&text, from, plain) });
                                }
                            }
                            // The pair test itself: the compares drop exactly the filtered
                            // stops (counted with a `plain` that passes over nothing).
                            #[cfg(target_arch = "x86_64")]
                            if !set.many {
                                let none = |_: usize| false;
                                let first = (from..len)
                                    .find(|&i| set.is_stop(text[i]) && !filtered(i))
                                    .unwrap_or(len);
                                let sse =
                                    scan_blocks(&text, from, none, |w| set.mask_sse2(w), table);
                                assert_eq!(sse, first, "{:?} from {from}", text);
                            }
                            for g in got {
                                assert_eq!(
                                    g,
                                    want,
                                    "{:?} from {from} skip {skip} texts {texts:?}",
                                    String::from_utf8_lossy(&text)
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
