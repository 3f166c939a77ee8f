//! Slurm's compressed host lists (`gpu[01-04,07],cpu9`) and task counts (`2(x3),1`), as
//! `SLURM_STEP_NODELIST` and `SLURM_STEP_TASKS_PER_NODE` spell them.
//!
//! The grammar is Slurm's (`src/common/hostlist.c`): names separated by commas outside
//! brackets; a bracket holds comma-separated numbers and `lo-hi` ranges, zero padding taken
//! from the width of `lo`; several brackets in one name multiply (`r[1-2]n[1-2]`). Every
//! function is bounded by its input, whatever the numbers in it: a list cannot make this
//! allocate more than [`MAX_HOSTS`] names of at most [`MAX_NAME_BYTES`] bytes each, or take
//! more than one step per name produced.

/// The most host names one list may expand to (Slurm's own limit on a job is far lower).
pub const MAX_HOSTS: usize = 1 << 16;

/// The longest host name a list may produce: a DNS name has at most 253 bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// Why a host list or task count did not parse: a short reason, shown after the variable and
/// its value by the launch layer's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub &'static str);

/// One bracketed range list: `(lo, hi, width)` for each element.
type Ranges = Vec<(u64, u64, usize)>;

/// A name split into literal text and bracketed ranges, in order.
enum Part<'a> {
    Text(&'a str),
    Ranges(Ranges),
}

/// Splits `list` at the commas outside brackets.
fn items(list: &str) -> Result<Vec<&str>, ParseError> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0u32, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(ParseError("nested brackets")),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(ParseError("`]` without `[`")),
            ',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(ParseError("`[` without `]`"));
    }
    out.push(&list[start..]);
    if out.iter().any(|s| s.trim().is_empty()) {
        return Err(ParseError("an empty host name"));
    }
    Ok(out.into_iter().map(str::trim).collect())
}

fn number(s: &str) -> Result<u64, ParseError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError("a range bound is not a number"));
    }
    s.parse().map_err(|_| ParseError("a range bound is too large"))
}

fn ranges(inner: &str) -> Result<Ranges, ParseError> {
    let mut out = Vec::new();
    for r in inner.split(',') {
        let (lo, hi) = r.split_once('-').unwrap_or((r, r));
        let (l, h) = (number(lo)?, number(hi)?);
        if h < l {
            return Err(ParseError("a range runs backwards"));
        }
        out.push((l, h, lo.len()));
    }
    Ok(out)
}

/// Digits of `n` in decimal.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The parts of one name, refused if a name it stands for could be longer than
/// [`MAX_NAME_BYTES`].
fn parts(name: &str) -> Result<Vec<Part<'_>>, ParseError> {
    let mut out = Vec::new();
    let mut rest = name;
    let mut longest = 0usize;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').ok_or(ParseError("`[` without `]`"))? + open;
        if open > 0 {
            out.push(Part::Text(&rest[..open]));
            longest = longest.saturating_add(open);
        }
        let r = ranges(&rest[open + 1..close])?;
        longest = longest.saturating_add(r.iter().map(|&(_, h, width)| width.max(digits(h))).max().unwrap_or(0));
        out.push(Part::Ranges(r));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Text(rest));
        longest = longest.saturating_add(rest.len());
    }
    if longest > MAX_NAME_BYTES {
        return Err(ParseError("a host name longer than 255 bytes"));
    }
    Ok(out)
}

/// How many numbers one element `(lo, hi)` stands for, saturating (`0-18446744073709551615`
/// is 2^64 of them).
fn span(lo: u64, hi: u64) -> u64 {
    (hi - lo).saturating_add(1)
}

/// How many names the ranges of one bracket stand for, saturating.
fn count(r: &Ranges) -> u64 {
    r.iter().fold(0u64, |n, &(l, h, _)| n.saturating_add(span(l, h)))
}

/// How many names one item stands for, saturating.
fn names_in(parts: &[Part<'_>]) -> u64 {
    parts.iter().fold(1u64, |n, p| match p {
        Part::Text(_) => n,
        Part::Ranges(r) => n.saturating_mul(count(r)),
    })
}

/// Where one bracket is in its ranges: the element, and the offset from its `lo`.
#[derive(Clone, Copy, Default)]
struct Cursor {
    element: usize,
    offset: u64,
}

/// Every item of `list` split into its parts, and how many names they stand for (saturating):
/// the whole list checked before any name is made.
fn parsed(list: &str) -> Result<(Vec<Vec<Part<'_>>>, u64), ParseError> {
    let items = items(list)?.into_iter().map(parts).collect::<Result<Vec<_>, _>>()?;
    let total = items.iter().fold(0u64, |n, p| n.saturating_add(names_in(p)));
    Ok((items, total))
}

/// Every host of `list`, in Slurm's order, at most [`MAX_HOSTS`]. A list that does not parse
/// anywhere is refused for that before one that names too many hosts.
pub fn expand(list: &str) -> Result<Vec<String>, ParseError> {
    let (items, total) = parsed(list)?;
    if total > MAX_HOSTS as u64 {
        return Err(ParseError("the host list names too many hosts"));
    }
    let mut hosts = Vec::with_capacity(total as usize);
    for parts in &items {
        // An odometer over the brackets, the last varying fastest (as in Slurm): one step per
        // name, however many elements a bracket has.
        let mut at = vec![Cursor::default(); parts.len()];
        for _ in 0..names_in(parts) {
            let mut name = String::new();
            for (p, c) in parts.iter().zip(&at) {
                match p {
                    Part::Text(t) => name.push_str(t),
                    Part::Ranges(r) => {
                        let (lo, _, width) = r[c.element];
                        name.push_str(&format!("{:0width$}", lo + c.offset));
                    }
                }
            }
            hosts.push(name);
            for (p, c) in parts.iter().zip(at.iter_mut()).rev() {
                let Part::Ranges(r) = p else { continue };
                let (lo, hi, _) = r[c.element];
                if c.offset < hi - lo {
                    c.offset += 1;
                    break;
                }
                *c = Cursor { element: c.element + 1, offset: 0 };
                if c.element < r.len() {
                    break;
                }
                *c = Cursor::default();
            }
        }
    }
    Ok(hosts)
}

/// How many hosts `list` names, without expanding it (saturating at `u64::MAX`), with the
/// same checks as [`expand`] on every name.
pub fn len(list: &str) -> Result<u64, ParseError> {
    parsed(list).map(|(_, total)| total)
}

/// The first host of `list`, without expanding the rest.
pub fn first(list: &str) -> Result<String, ParseError> {
    let items = items(list)?;
    let mut name = String::new();
    for p in parts(items[0])? {
        match p {
            Part::Text(t) => name.push_str(t),
            Part::Ranges(r) => {
                let (lo, _, width) = r[0];
                name.push_str(&format!("{lo:0width$}"));
            }
        }
    }
    if name.is_empty() {
        return Err(ParseError("an empty host name"));
    }
    Ok(name)
}

/// The items of a Slurm task count list (`2(x3),1`): (tasks, nodes) for each.
fn task_items(list: &str) -> impl Iterator<Item = Result<(u64, u64), ParseError>> + '_ {
    list.split(',').map(|item| {
        let item = item.trim();
        let (tasks, repeat) = match item.split_once('(') {
            Some((t, r)) => {
                let r = r
                    .strip_prefix('x')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or(ParseError("a repeat is not `(xN)`"))?;
                (number(t)?, number(r)?)
            }
            None => (number(item)?, 1),
        };
        if repeat == 0 {
            return Err(ParseError("a repeat of zero nodes"));
        }
        Ok((tasks, repeat))
    })
}

/// Tasks on node `node` of a Slurm task count list (`2(x3),1`: two tasks on each of the first
/// three nodes, one on the fourth); `None` when the list covers fewer nodes.
pub fn tasks_on_node(list: &str, node: u64) -> Result<Option<u64>, ParseError> {
    let mut seen = 0u64;
    for item in task_items(list) {
        let (tasks, repeat) = item?;
        if node < seen.saturating_add(repeat) {
            return Ok(Some(tasks));
        }
        seen = seen.saturating_add(repeat);
    }
    Ok(None)
}

/// The nodes a task count list covers and the tasks it counts on them, both saturating.
pub fn task_totals(list: &str) -> Result<(u64, u64), ParseError> {
    let (mut nodes, mut tasks) = (0u64, 0u64);
    for item in task_items(list) {
        let (t, repeat) = item?;
        nodes = nodes.saturating_add(repeat);
        tasks = tasks.saturating_add(t.saturating_mul(repeat));
    }
    Ok((nodes, tasks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_lists_and_keeps_zero_padding() {
        assert_eq!(expand("gpu[01-04,07],cpu9").unwrap(), ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu9"]);
        assert_eq!(expand("n[8-11]").unwrap(), ["n8", "n9", "n10", "n11"]);
        assert_eq!(expand("n[098-101]").unwrap(), ["n098", "n099", "n100", "n101"]);
        assert_eq!(expand("node1").unwrap(), ["node1"]);
        assert_eq!(expand("a,b[2],c").unwrap(), ["a", "b2", "c"]);
        assert_eq!(expand("r[1-2]n[01-02]").unwrap(), ["r1n01", "r1n02", "r2n01", "r2n02"]);
        assert_eq!(expand("x[1-2].ib").unwrap(), ["x1.ib", "x2.ib"]);
        assert_eq!(first("gpu[01-04,07],cpu9").unwrap(), "gpu01");
        assert_eq!(first("r[3-4]n[07-09]").unwrap(), "r3n07");
    }

    #[test]
    fn malformed_and_hostile_lists_are_errors() {
        for bad in ["", "a,,b", "n[1-", "n1]", "n[[1]]", "n[4-2]", "n[a-b]", "n[1-2", "n[-3]", "n[]"] {
            assert!(expand(bad).is_err(), "{bad:?}");
        }
        // 10^18 names: refused without allocating them.
        assert_eq!(expand("n[0-999999999999999999]"), Err(ParseError("the host list names too many hosts")));
        assert_eq!(expand("a[0-99999]b[0-99999]").unwrap_err(), ParseError("the host list names too many hosts"));
        assert_eq!(first("n[0-999999999999999999]").unwrap(), "n0");
        assert!(expand("n[99999999999999999999999]").is_err());
    }

    #[test]
    fn bounds_at_the_ends_of_u64_and_of_a_name() {
        // A range of 2^64 numbers: h - l + 1 overflowed (a panic; in release a count of 0 that
        // dropped the item without a word).
        let all = "n[0-18446744073709551615]";
        assert_eq!(expand(all), Err(ParseError("the host list names too many hosts")));
        assert_eq!(first(all).unwrap(), "n0");
        assert_eq!(len(all), Ok(u64::MAX));
        assert_eq!(len("a[0-18446744073709551615]b[0-18446744073709551615],c"), Ok(u64::MAX));
        assert_eq!(expand("n[18446744073709551614-18446744073709551615]").unwrap().len(), 2);
        // Names longer than any host's: refused before any is made (64 Ki names of 100 KB
        // each before).
        let padded = format!("n[{}-65535]", "0".repeat(100_000));
        let long = format!("{}[0-65535]", "a".repeat(100_000));
        for list in [&padded, &long, &"x".repeat(256)] {
            assert_eq!(expand(list), Err(ParseError("a host name longer than 255 bytes")));
            assert_eq!(first(list), Err(ParseError("a host name longer than 255 bytes")));
            assert_eq!(len(list), Err(ParseError("a host name longer than 255 bytes")));
        }
        assert_eq!(expand(&"x".repeat(255)).unwrap(), ["x".repeat(255)]);
    }

    #[test]
    fn a_malformed_list_is_refused_as_malformed_whatever_its_size() {
        // Too many names in the first item, a malformed second one: the list does not parse
        // ("too many hosts" before, while len said "not a number"; found by the
        // slurm_hostlist fuzz target).
        let list = "X[98-76009],n[0\u{0}1]";
        assert_eq!(expand(list), Err(ParseError("a range bound is not a number")));
        assert_eq!(len(list), Err(ParseError("a range bound is not a number")));
        assert_eq!(expand("a[0-65535],b"), Err(ParseError("the host list names too many hosts")));
        assert_eq!(expand("a[1-65535],b").unwrap().len(), 65536);
    }

    #[test]
    fn a_bracket_of_many_elements_expands_in_one_step_per_name() {
        // 50 000 elements: each name looked its element up from the start before (2.5e9 steps).
        let list = format!("n[{}]", vec!["7"; 50_000].join(","));
        let start = std::time::Instant::now();
        let hosts = expand(&list).unwrap();
        assert_eq!((hosts.len(), hosts[49_999].as_str()), (50_000, "n7"));
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
        assert_eq!(expand("a[1-2,5]b[08-09]").unwrap(), ["a1b08", "a1b09", "a2b08", "a2b09", "a5b08", "a5b09"]);
        assert_eq!(len("a[1-2,5]b[08-09],c"), Ok(7));
    }

    #[test]
    fn task_counts_per_node() {
        for (node, want) in [(0, 2), (2, 2), (3, 1)] {
            assert_eq!(tasks_on_node("2(x3),1", node), Ok(Some(want)));
        }
        assert_eq!(tasks_on_node("4", 0), Ok(Some(4)));
        assert_eq!(tasks_on_node("2(x3),1", 4), Ok(None));
        assert!(tasks_on_node("2(3)", 0).is_err());
        assert!(tasks_on_node("2(x0)", 0).is_err());
        assert!(tasks_on_node("x", 0).is_err());
        assert_eq!(task_totals("2(x3),1"), Ok((4, 7)));
        assert_eq!(task_totals("18446744073709551615(x18446744073709551615),1"), Ok((u64::MAX, u64::MAX)));
        assert!(task_totals("2,,1").is_err());
    }
}
