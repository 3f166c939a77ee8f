//! Slurm's compressed host lists (`gpu[01-04,07],cpu9`) and task counts (`2(x3),1`), as
//! `SLURM_STEP_NODELIST` and `SLURM_STEP_TASKS_PER_NODE` spell them.
//!
//! The grammar is Slurm's (`src/common/hostlist.c`): names separated by commas outside
//! brackets; a bracket holds comma-separated numbers and `lo-hi` ranges, zero padding taken
//! from the width of `lo`; several brackets in one name multiply (`r[1-2]n[1-2]`). Expansion is
//! bounded: a hostile list cannot make this allocate more than [`MAX_HOSTS`] names.

/// The most host names one list may expand to (Slurm's own limit on a job is far lower).
pub const MAX_HOSTS: usize = 1 << 16;

/// Why a host list or task count did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
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

fn parts(name: &str) -> Result<Vec<Part<'_>>, ParseError> {
    let mut out = Vec::new();
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').ok_or(ParseError("`[` without `]`"))? + open;
        if open > 0 {
            out.push(Part::Text(&rest[..open]));
        }
        out.push(Part::Ranges(ranges(&rest[open + 1..close])?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Text(rest));
    }
    Ok(out)
}

/// How many names the ranges of one bracket stand for, saturating.
fn count(r: &Ranges) -> u64 {
    r.iter().fold(0u64, |n, (l, h, _)| n.saturating_add(h - l + 1))
}

/// The `index`th number of a bracket, zero-padded to its range's width.
fn nth(r: &Ranges, mut index: u64) -> String {
    for &(l, h, width) in r {
        let n = h - l + 1;
        if index < n {
            return format!("{:0width$}", l + index);
        }
        index -= n;
    }
    unreachable!("index checked against count")
}

/// Every host of `list`, in Slurm's order, at most [`MAX_HOSTS`].
pub fn expand(list: &str) -> Result<Vec<String>, ParseError> {
    let mut hosts = Vec::new();
    for item in items(list)? {
        let parts = parts(item)?;
        let total = parts.iter().fold(1u64, |n, p| match p {
            Part::Text(_) => n,
            Part::Ranges(r) => n.saturating_mul(count(r)),
        });
        if total > (MAX_HOSTS - hosts.len()) as u64 {
            return Err(ParseError("the host list names too many hosts"));
        }
        for mut i in 0..total {
            // The last bracket varies fastest, as in Slurm.
            let mut name = Vec::with_capacity(parts.len());
            for p in parts.iter().rev() {
                match p {
                    Part::Text(t) => name.push((*t).to_string()),
                    Part::Ranges(r) => {
                        let n = count(r);
                        name.push(nth(r, i % n));
                        i /= n;
                    }
                }
            }
            name.reverse();
            hosts.push(name.concat());
        }
    }
    Ok(hosts)
}

/// The first host of `list`, without expanding the rest.
pub fn first(list: &str) -> Result<String, ParseError> {
    let items = items(list)?;
    let mut name = String::new();
    for p in parts(items[0])? {
        match p {
            Part::Text(t) => name.push_str(t),
            Part::Ranges(r) => name.push_str(&nth(&r, 0)),
        }
    }
    if name.is_empty() {
        return Err(ParseError("an empty host name"));
    }
    Ok(name)
}

/// Tasks on node `node` of a Slurm task count list (`2(x3),1`: two tasks on each of the first
/// three nodes, one on the fourth).
pub fn tasks_on_node(list: &str, node: u64) -> Result<u64, ParseError> {
    let mut seen = 0u64;
    for item in list.split(',') {
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
        if node < seen.saturating_add(repeat) {
            return Ok(tasks);
        }
        seen = seen.saturating_add(repeat);
    }
    Err(ParseError("the node index is past the task count list"))
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
    fn task_counts_per_node() {
        for (node, want) in [(0, 2), (2, 2), (3, 1)] {
            assert_eq!(tasks_on_node("2(x3),1", node), Ok(want));
        }
        assert_eq!(tasks_on_node("4", 0), Ok(4));
        assert!(tasks_on_node("2(x3),1", 4).is_err());
        assert!(tasks_on_node("2(3)", 0).is_err());
        assert!(tasks_on_node("2(x0)", 0).is_err());
        assert!(tasks_on_node("x", 0).is_err());
    }
}
