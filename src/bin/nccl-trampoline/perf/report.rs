//! What `perf` prints, byte for byte as nccl-tests 2.19.6 prints it: the number formats
//! (`printf`'s `%f`, `%e` and `%g`, reproduced here), the table's header, rows and footer, and
//! the `-J` JSON document. Line numbers cite nccl-tests v2.19.6 (commit a0b82b2).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

/// One measured placement (out-of-place or in-place) of one row.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Time per operation, seconds (enqueue through completion; with `-z 3` the operations
    /// alone).
    pub time: f64,
    /// Host time per operation spent enqueueing, seconds (`-C 1`).
    pub cpu: f64,
    /// nccl-tests' algbw and busbw, GB/s, from `time`.
    pub algbw: f64,
    pub busbw: f64,
    /// Wrong elements summed over ranks; `None` when not reported (`-c 0`, or a placement
    /// nccl-tests does not check).
    pub wrong: Option<u64>,
    /// `-I 1`: every iteration's time, seconds, the maximum over this process's GPUs.
    pub iterations: Vec<f64>,
    /// `-I 1` with several processes: each process's row of iteration times (rank 0 only).
    pub per_process: Vec<Vec<f64>>,
    /// Processes whose own check found a wrong element (nccl-tests' "Out of bounds values"
    /// counts these).
    pub failed: u64,
}

impl Measured {
    /// A placement measured in `time` seconds with `cpu` host seconds per operation.
    pub fn new(time: f64, cpu: f64, wrong: Option<u64>) -> Self {
        Measured {
            time,
            cpu,
            algbw: 0.0,
            busbw: 0.0,
            wrong,
            iterations: Vec::new(),
            per_process: Vec::new(),
            failed: 0,
        }
    }
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub size: usize,
    pub count: usize,
    pub dtype: &'static str,
    pub redop: &'static str,
    pub root: i32,
    pub out_of_place: Measured,
    pub in_place: Measured,
    /// `-S 1`: when the row was finished (`%Y-%m-%d %H:%M:%S`, local time).
    pub timestamp: Option<String>,
}

/// What the table shows besides the fixed columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// `-C 1`: the host time of the enqueue loop instead of the wall time.
    pub cputime: bool,
    /// `-S 1`: a timestamp per row.
    pub timestamps: bool,
    /// `-I 1`: per-iteration statistics after each placement.
    pub per_iteration: bool,
    /// `-K`: leading iterations left out of the statistics.
    pub skip: usize,
}

// ---- printf's number formats ----

/// C's `%.{precision}e`: mantissa, `e`, sign, at least two exponent digits; `inf`, `nan`.
pub fn c_exp(v: f64, precision: usize) -> String {
    if !v.is_finite() {
        return c_non_finite(v);
    }
    let s = format!("{v:.precision$e}");
    let (mantissa, exp) = s.split_once('e').expect("Rust's {:e} has an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// C's `inf`, `-inf` and `nan` (glibc writes a negative NaN as `-nan`).
fn c_non_finite(v: f64) -> String {
    match (v.is_nan(), v.is_sign_negative()) {
        (true, false) => "nan".into(),
        (true, true) => "-nan".into(),
        (false, false) => "inf".into(),
        (false, true) => "-inf".into(),
    }
}

/// C's `%.{precision}f`.
pub fn c_fixed(v: f64, precision: usize) -> String {
    if v.is_finite() {
        format!("{v:.precision$}")
    } else {
        c_non_finite(v)
    }
}

/// C's `%g` (six significant digits, trailing zeros removed, exponent form below 1e-4 and
/// from 1e6).
pub fn c_g(v: f64) -> String {
    const P: i32 = 6;
    if !v.is_finite() {
        return c_non_finite(v);
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // The exponent after rounding to P significant digits decides the style (C11 7.21.6.1).
    let e = format!("{v:.*e}", (P - 1) as usize);
    let x: i32 = e.split_once('e').expect("an exponent").1.parse().expect("a decimal exponent");
    let strip = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if (-4..P).contains(&x) {
        strip(format!("{v:.*}", (P - 1 - x) as usize))
    } else {
        let (m, _) = e.split_once('e').expect("an exponent");
        format!("{}e{}{:02}", strip(m.to_string()), if x < 0 { '-' } else { '+' }, x.abs())
    }
}

/// nccl-tests' `getFloatStr` (src/util.cu:487-492): the value in `width` characters with two
/// decimals, else one, else none, else in exponent form.
pub fn float_str(v: f64, width: usize) -> String {
    for precision in [2, 1, 0] {
        let s = format!("{:>width$}", c_fixed(v, precision));
        if s.len() <= width {
            return s;
        }
    }
    // snprintf into width+1 bytes: what does not fit is cut.
    let mut s = format!("{:>width$}", c_exp(v, if width >= 7 { 1 } else { 0 }));
    s.truncate(width);
    s
}

// ---- the table ----

/// The result header (src/util.cu:736-765): `#`, then two or three header lines.
pub fn table_header(c: Columns) -> String {
    let time = if c.cputime { "cputime" } else { "time" };
    let (pad, label, format) = if c.timestamps { (19, "timestamp", "%Y-%m-%d %H:%M:%S") } else { (0, "", "") };
    let lead = |a: &str, b: &str| format!("# {a:>10}  {b:>12}  {:>8}  {:>6}  {:>6}", "", "", "");
    let mut s = String::from("#\n");
    if c.per_iteration {
        let _ = writeln!(
            s,
            "{}              out-of-place (+ per-iteration)                                in-place (+ per-iteration)",
            lead("", "")
        );
        let _ = writeln!(
            s,
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {time:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {time:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7} {label:>pad$}",
            "size", "count", "type", "redop", "root", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
            "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"
        );
        let _ = writeln!(
            s,
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7} {format:>pad$}",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", "(us)",
            "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)"
        );
    } else {
        let _ = writeln!(s, "{}           out-of-place                       in-place          ", lead("", ""));
        let _ = writeln!(
            s,
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {time:>7}  {:>6}  {:>6}  {:>6}  {time:>7}  {:>6}  {:>6}  {:>6} {label:>pad$}",
            "size", "count", "type", "redop", "root", "algbw", "busbw", "#wrong", "algbw", "busbw", "#wrong"
        );
        let _ = writeln!(
            s,
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} {format:>pad$}",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
        );
    }
    s
}

/// The statistics of `-I 1` over the iterations after `skip` (src/util.cu:523-547).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterStats {
    pub min: f64,
    pub max: f64,
    pub avg: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub stdev: f64,
}

impl IterStats {
    /// `computeIterStats`: nearest-rank percentiles, the population standard deviation.
    /// `None` for no iterations.
    pub fn of(times: &[f64]) -> Option<IterStats> {
        let n = times.len();
        if n == 0 {
            return None;
        }
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        let percentile = |p: usize| sorted[(n * p).div_ceil(100).saturating_sub(1).min(n - 1)];
        // The sum in sorted order, as nccl-tests adds them.
        let avg = sorted.iter().sum::<f64>() / n as f64;
        let var = sorted.iter().map(|t| (t - avg) * (t - avg)).sum::<f64>() / n as f64;
        Some(IterStats {
            min: sorted[0],
            max: sorted[n - 1],
            avg,
            p50: sorted[n / 2],
            p95: percentile(95),
            p99: percentile(99),
            stdev: var.sqrt(),
        })
    }

    /// The coefficient of variation in percent.
    pub fn cv_pct(&self) -> f64 {
        if self.avg > 0.0 {
            self.stdev / self.avg * 100.0
        } else {
            0.0
        }
    }
}

/// One table line (src/util.cu:454-458, 495-511, 549-568, 606-610).
pub fn table_row(row: &Row, c: Columns) -> String {
    let mut s = format!("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.size, row.count, row.dtype, row.redop, row.root);
    for m in [&row.out_of_place, &row.in_place] {
        let t = if c.cputime { m.cpu } else { m.time } * 1e6;
        let (t, a, b) = (float_str(t, 7), float_str(m.algbw, 6), float_str(m.busbw, 6));
        match m.wrong {
            Some(w) => write!(s, "  {t:>7}  {a:>6}  {b:>6}  {:>6}", c_g(w as f64)),
            None => write!(s, "  {t:>7}  {a:>6}  {b:>6}    N/A"),
        }
        .expect("writing to a String");
        if c.per_iteration {
            if let Some(st) = IterStats::of(m.iterations.get(c.skip..).unwrap_or_default()) {
                let f = |v: f64| float_str(v, 7);
                let _ =
                    write!(s, "  {}  {}  {}  {}", f(st.min * 1e6), f(st.max * 1e6), f(st.p99 * 1e6), f(st.cv_pct()));
            }
        }
    }
    if let Some(ts) = &row.timestamp {
        let _ = write!(s, "{ts:>21}");
    }
    s
}

/// The closing lines (src/util.cu:767-781): the number of failed checks, the average bus
/// bandwidth (judged against `NCCL_TESTS_MIN_BW` when set), and the program's name.
pub fn table_footer(failed_checks: u64, avg_busbw: f64, min_bw: Option<f64>, program: &str) -> String {
    let verdict = match min_bw {
        None => "",
        Some(min) if avg_busbw < min * 0.9 => "FAILED",
        Some(_) => "OK",
    };
    format!(
        "# {:<20} : {failed_checks} {}\n# {:<20} : {} {verdict}\n#\n# Collective test concluded: {program}\n",
        "Out of bounds values",
        if failed_checks == 0 { "OK" } else { "FAILED" },
        "Avg bus bandwidth",
        c_g(avg_busbw)
    )
}

/// nccl-tests' `getMemString` (src/util.cu:800-819): binary units, 2, 1 or 0 decimals.
pub fn mem_string(bytes: i64) -> String {
    let mut amount = bytes as f64;
    let mut unit = " B";
    for (scale, name) in [(1u64 << 30, " GB"), (1 << 20, " MB"), (1 << 10, " KB")] {
        if amount.abs() >= scale as f64 {
            amount /= scale as f64;
            unit = name;
            break;
        }
    }
    let precision = if amount.abs() < 10.0 {
        2
    } else if amount.abs() < 100.0 {
        1
    } else {
        0
    };
    format!("{}{unit}", c_fixed(amount, precision))
}

/// `-M 1`'s line (src/util.cu:821-835): memory taken by NCCL's initialisation, by perf's
/// buffers and by the collectives, each the maximum over GPUs.
pub fn memory_line(init: i64, buffers: i64, collective: i64) -> String {
    let parts = [("Initialization", init), ("User-Allocated", buffers), ("Collective", collective)];
    let mut s = String::new();
    for (name, amount) in parts {
        let _ = write!(s, "{name} {} | ", mem_string(amount));
    }
    let total = parts.iter().map(|p| p.1 as u64).fold(0u64, u64::wrapping_add) as i64;
    format!("# {:<20} : {s}Total  {}\n", "GPU memory usage", mem_string(total))
}

/// The mean busbw over every measurement (out-of-place and in-place), nccl-tests' average.
pub fn average_busbw(rows: &[Row]) -> f64 {
    let v: Vec<f64> = rows.iter().flat_map(|r| [r.out_of_place.busbw, r.in_place.busbw]).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

/// nccl-tests' "Out of bounds values": per placement, the processes whose check found a
/// wrong element.
pub fn failed_checks(rows: &[Row]) -> u64 {
    rows.iter().flat_map(|r| [&r.out_of_place, &r.in_place]).map(|m| m.failed).sum()
}

// ---- the JSON document ----

/// A JSON value as nccl-tests writes it (src/util.cu:53-298).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    /// `%d` / `%zu`.
    Int(i64),
    /// `%lf`, `"nan"` for NaN (and `inf` as C prints it, which no JSON parser reads: as
    /// nccl-tests).
    Double(f64),
    Str(String),
    /// nccl-tests writes booleans as the strings `"true"` and `"false"`.
    Bool(bool),
    List(Vec<Json>),
    Object(Vec<(&'static str, Json)>),
}

impl Json {
    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    /// The document on one line, without spaces, as nccl-tests writes it.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, s: &mut String) {
        match self {
            Json::Null => s.push_str("null"),
            Json::Int(v) => {
                let _ = write!(s, "{v}");
            }
            Json::Double(v) if v.is_nan() => s.push_str("\"nan\""),
            Json::Double(v) => s.push_str(&c_fixed(*v, 6)),
            Json::Str(v) => {
                s.push('"');
                s.push_str(&sanitize(v));
                s.push('"');
            }
            Json::Bool(b) => s.push_str(if *b { "\"true\"" } else { "\"false\"" }),
            Json::List(items) => {
                s.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    v.write(s);
                }
                s.push(']');
            }
            Json::Object(fields) => {
                s.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "\"{}\":", sanitize(k));
                    v.write(s);
                }
                s.push('}');
            }
        }
    }
}

/// nccl-tests' `sanitizeJson` (src/util.cu:77-117): `"`, `\` and `/` escaped, tab and newline
/// as `\t` and `\n`; the string ends at the first other control character or non-ASCII
/// byte (nccl-tests stops there), and at 2,047 bytes.
pub fn sanitize(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let quoted = match c {
            '"' | '\\' | '/' => format!("\\{c}"),
            '\t' => "\\t".into(),
            '\n' => "\\n".into(),
            c if (c as u32) <= 0x1f || (c as u32) >= 0x7f => break,
            c => c.to_string(),
        };
        if out.len() + quoted.len() > 2047 {
            break;
        }
        out.push_str(&quoted);
    }
    out
}

/// One placement's object (src/util.cu:513-520).
pub fn json_placement(m: &Measured, cputime: bool) -> Json {
    Json::Object(vec![
        (if cputime { "cpu_time" } else { "time" }, Json::Double(if cputime { m.cpu } else { m.time } * 1e6)),
        ("alg_bw", Json::Double(m.algbw)),
        ("bus_bw", Json::Double(m.busbw)),
        ("nwrong", m.wrong.map_or(Json::Null, |w| Json::Double(w as f64))),
    ])
}

/// `-I 1`'s object for one placement (src/util.cu:571-603).
pub fn json_per_iteration(m: &Measured, skip: usize) -> Json {
    let us = |v: f64| Json::Double(v * 1e6);
    let st = IterStats::of(m.iterations.get(skip..).unwrap_or_default());
    let stat = |f: fn(&IterStats) -> f64| st.as_ref().map_or(Json::Null, |s| us(f(s)));
    let mut fields = vec![
        ("skipped_iterations", Json::Int(skip as i64)),
        ("min_us", stat(|s| s.min)),
        ("max_us", stat(|s| s.max)),
        ("avg_us", stat(|s| s.avg)),
        ("p50_us", stat(|s| s.p50)),
        ("p95_us", stat(|s| s.p95)),
        ("p99_us", stat(|s| s.p99)),
        ("stdev_us", stat(|s| s.stdev)),
        ("cv_pct", st.as_ref().map_or(Json::Null, |s| Json::Double(s.cv_pct()))),
        ("times_us", Json::List(m.iterations.iter().map(|&t| us(t)).collect())),
    ];
    if m.per_process.len() > 1 {
        let rows = m.per_process.iter().map(|r| Json::List(r.iter().map(|&t| us(t)).collect())).collect();
        fields.push(("per_process_max_times_us", Json::List(rows)));
    }
    Json::Object(fields)
}

/// One result's object (src/util.cu:459-477, 513-520, 571-603).
pub fn json_row(row: &Row, c: Columns, iterations: u32) -> Json {
    let mut fields = vec![
        ("size", Json::Int(row.size as i64)),
        ("count", Json::Int(row.count as i64)),
        ("type", Json::str(row.dtype)),
        ("redop", Json::str(row.redop)),
        ("root", Json::Str(format!("{:6}", row.root))),
        ("out_of_place", json_placement(&row.out_of_place, c.cputime)),
    ];
    if c.per_iteration {
        fields.push(("out_of_place_per_iter", json_per_iteration(&row.out_of_place, c.skip)));
    }
    fields.push(("in_place", json_placement(&row.in_place, c.cputime)));
    if c.per_iteration {
        fields.push(("in_place_per_iter", json_per_iteration(&row.in_place, c.skip)));
    }
    fields.push(("actual_iterations", Json::Int(i64::from(iterations))));
    fields.push(("experiment_name", Json::str("")));
    Json::Object(fields)
}

/// The summary objects after the results (src/util.cu:783-796).
pub fn json_summary(failed_checks: u64, avg_busbw: f64, min_bw: Option<f64>) -> Vec<(&'static str, Json)> {
    vec![
        (
            "out_of_bounds",
            Json::Object(vec![("count", Json::Int(failed_checks as i64)), ("okay", Json::Bool(failed_checks == 0))]),
        ),
        (
            "average_bus_bandwidth",
            Json::Object(vec![
                ("bandwidth", Json::Double(avg_busbw)),
                ("okay", min_bw.map_or(Json::str("unchecked"), |m| Json::Bool(avg_busbw >= m * 0.9))),
            ]),
        ),
    ]
}

/// A one-line progress bar on stderr, shown only when stderr is a terminal.
pub struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
}

impl Progress {
    pub fn new(total: usize, allowed: bool) -> Self {
        Progress { enabled: allowed && std::io::stderr().is_terminal(), total, done: 0 }
    }

    pub fn advance(&mut self, label: &str) {
        self.done += 1;
        if !self.enabled {
            return;
        }
        let width = 30;
        let filled = width * self.done.min(self.total) / self.total.max(1);
        eprint!("\r\x1b[2K[{}{}] {}/{} {label}", "#".repeat(filled), " ".repeat(width - filled), self.done, self.total);
        let _ = std::io::stderr().flush();
    }

    /// Erases the bar before a table line goes to a shared terminal.
    pub fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        let m = Measured::new(12.5e-6, 3.25e-6, Some(0));
        Row {
            size: 8,
            count: 2,
            dtype: "float",
            redop: "sum",
            root: -1,
            out_of_place: m.clone(),
            in_place: m,
            timestamp: None,
        }
    }

    #[test]
    fn printf_formats_match_c() {
        // Each expectation is what glibc's printf writes.
        assert_eq!(c_g(0.0), "0");
        assert_eq!(c_g(3.0), "3");
        assert_eq!(c_g(123456.0), "123456");
        assert_eq!(c_g(1234567.0), "1.23457e+06");
        assert_eq!(c_g(0.0001), "0.0001");
        assert_eq!(c_g(0.00001234), "1.234e-05");
        assert_eq!(c_g(12.345678), "12.3457");
        assert_eq!(c_g(999999.5), "1e+06");
        assert_eq!(c_g(f64::NAN), "nan");
        assert_eq!(c_exp(123456.0, 1), "1.2e+05");
        assert_eq!(c_exp(1e100, 0), "1e+100");
        assert_eq!(c_exp(0.0, 1), "0.0e+00");
        assert_eq!(c_fixed(f64::INFINITY, 2), "inf");
    }

    #[test]
    fn float_str_drops_decimals_as_nccl_tests() {
        assert_eq!(float_str(12.5, 7), "  12.50");
        assert_eq!(float_str(9999.999, 7), "10000.0");
        assert_eq!(float_str(123456.4, 7), " 123456");
        assert_eq!(float_str(12345678.0, 7), "1.2e+07");
        // A bus bandwidth of 1000 GB/s or more keeps its column (nccl-tests 2.19.6 fix).
        assert_eq!(float_str(1234.567, 6), "1234.6");
        assert_eq!(float_str(123456.7, 6), "123457");
        assert_eq!(float_str(1234567.0, 6), " 1e+06");
        assert_eq!(float_str(0.0, 6), "  0.00");
    }

    #[test]
    fn rows_have_nccl_tests_widths() {
        let c = Columns::default();
        assert_eq!(
            table_row(&row(), c),
            "           8             2     float     sum      -1    12.50    0.00    0.00       0    12.50    0.00    0.00       0"
        );
        let mut r = row();
        r.in_place.wrong = None;
        r.out_of_place.wrong = Some(1_234_567);
        assert!(table_row(&r, c).ends_with("1.23457e+06    12.50    0.00    0.00    N/A"), "{}", table_row(&r, c));
        let cpu = Columns { cputime: true, ..c };
        assert!(table_row(&row(), cpu).contains("     3.25 "));
    }

    #[test]
    fn per_iteration_columns_and_statistics() {
        let times = [4e-6, 1e-6, 3e-6, 2e-6];
        let st = IterStats::of(&times).unwrap();
        assert_eq!((st.min, st.max, st.p50, st.p95, st.p99), (1e-6, 4e-6, 3e-6, 4e-6, 4e-6));
        assert!((st.avg - 2.5e-6).abs() < 1e-18);
        assert!((st.cv_pct() - (1.25f64.sqrt() / 2.5 * 100.0)).abs() < 1e-9);
        // Nearest rank: 99th of 200 samples is the 198th.
        let many: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(IterStats::of(&many).unwrap().p99, 198.0);
        assert_eq!(IterStats::of(&[]), None);
        let mut r = row();
        r.out_of_place.iterations = times.to_vec();
        r.in_place.iterations = times.to_vec();
        let c = Columns { per_iteration: true, skip: 1, ..Columns::default() };
        // Skipping the first sample (4 us) leaves 1, 3, 2.
        assert!(table_row(&r, c).contains("       0     1.00     3.00     3.00    40.82"), "{}", table_row(&r, c));
    }

    #[test]
    fn header_lines_are_nccl_tests_own() {
        let h = table_header(Columns::default());
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[0], "#");
        assert_eq!(
            lines[1],
            "#                                                              out-of-place                       in-place          "
        );
        assert_eq!(
            lines[2],
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
        );
        assert_eq!(
            lines[3],
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         "
        );
        let ts = table_header(Columns { timestamps: true, ..Columns::default() });
        assert!(ts.lines().nth(2).unwrap().ends_with("#wrong           timestamp"));
        assert!(ts.lines().nth(3).unwrap().ends_with(" %Y-%m-%d %H:%M:%S"));
        // Every column name ends where its values end.
        let names = lines[2];
        let line = table_row(&row(), Columns::default());
        for (name, value) in [("count", "2"), ("redop", "sum"), ("#wrong", "0")] {
            let end = names.find(name).unwrap() + name.len();
            assert_eq!(&line[end - value.len()..end], value, "column {name}");
        }
    }

    #[test]
    fn footer_counts_failed_checks_and_judges_min_bw() {
        assert_eq!(
            table_footer(0, 12.5, None, "all_reduce_perf"),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5 \n#\n# Collective test concluded: all_reduce_perf\n"
        );
        assert!(table_footer(2, 1.0, Some(2.0), "x").contains(": 2 FAILED\n# Avg bus bandwidth    : 1 FAILED\n"));
        assert!(table_footer(0, 1.9, Some(2.0), "x").contains(": 1.9 OK\n"));
        let mut r = row();
        r.in_place.wrong = Some(3);
        r.in_place.failed = 2;
        assert_eq!(failed_checks(&[r.clone(), r]), 4);
    }

    #[test]
    fn memory_strings_are_nccl_tests_own() {
        assert_eq!(mem_string(512), "512 B");
        assert_eq!(mem_string(1536), "1.50 KB");
        assert_eq!(mem_string(50 << 20), "50.0 MB");
        assert_eq!(mem_string(600 << 30), "600 GB");
        assert_eq!(
            memory_line(1 << 30, 2 << 20, 0),
            "# GPU memory usage     : Initialization 1.00 GB | User-Allocated 2.00 MB | Collective 0.00 B | Total  1.00 GB\n"
        );
    }

    #[test]
    fn json_is_nccl_tests_own() {
        assert_eq!(sanitize("a\"b\\c/d\te\nf"), "a\\\"b\\\\c\\/d\\te\\nf");
        assert_eq!(sanitize("ok\x01cut"), "ok");
        assert_eq!(sanitize("é"), "");
        let doc = json_row(&row(), Columns::default(), 20).render();
        assert_eq!(
            doc,
            "{\"size\":8,\"count\":2,\"type\":\"float\",\"redop\":\"sum\",\"root\":\"    -1\",\
             \"out_of_place\":{\"time\":12.500000,\"alg_bw\":0.000000,\"bus_bw\":0.000000,\"nwrong\":0.000000},\
             \"in_place\":{\"time\":12.500000,\"alg_bw\":0.000000,\"bus_bw\":0.000000,\"nwrong\":0.000000},\
             \"actual_iterations\":20,\"experiment_name\":\"\"}"
        );
        assert_eq!(Json::Double(f64::NAN).render(), "\"nan\"");
        assert_eq!(Json::Bool(false).render(), "\"false\"");
        let summary = Json::Object(json_summary(0, 1.5, None)).render();
        assert_eq!(
            summary,
            "{\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":1.500000,\"okay\":\"unchecked\"}}"
        );
    }
}

/// The formats against C's own `printf`: a C program prints random values with nccl-tests'
/// format strings and rules (src/util.cu:454-511, 487-492, 777-778, 296), and every line must
/// be ours byte for byte.
#[cfg(test)]
mod printf_oracle {
    use super::*;

    const ORACLE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
/* The rule of nccl-tests' getFloatStr: two decimals, else one, else none, else exponent. */
static void fstr(double v, int w, char *s) {
    if (snprintf(s, w + 1, "%*.2f", w, v) <= w) return;
    if (snprintf(s, w + 1, "%*.1f", w, v) <= w) return;
    if (snprintf(s, w + 1, "%*.0f", w, v) <= w) return;
    snprintf(s, w + 1, w >= 7 ? "%*.1e" : "%*.0e", w, v);
}
int main(void) {
    long size, count, root; char type[16], op[16]; double t[2], a[2], b[2], wr[2];
    while (scanf("%ld %ld %15s %15s %ld %lf %lf %lf %lf %lf %lf %lf %lf", &size, &count, type, op, &root,
                 &t[0], &a[0], &b[0], &wr[0], &t[1], &a[1], &b[1], &wr[1]) == 13) {
        char r[16]; sprintf(r, "%6li", root);
        printf("%12li  %12li  %8s  %6s  %6s", size, count, type, op, r);
        for (int p = 0; p < 2; p++) {
            char ts[8], as[7], bs[7];
            fstr(t[p], 7, ts); fstr(a[p], 6, as); fstr(b[p], 6, bs);
            if (wr[p] >= 0) printf("  %7s  %6s  %6s  %6g", ts, as, bs, wr[p]);
            else printf("  %7s  %6s  %6s    N/A", ts, as, bs);
        }
        printf("|%g|%lf\n", b[0], a[1]);
    }
    return 0;
}
"#;

    /// A value of any magnitude a table may hold, edges included.
    fn value(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let mantissa = (*seed % 1_000_000) as f64 / 1000.0;
        let exponent = (*seed >> 20) % 14;
        match (*seed >> 40) % 8 {
            0 => 0.0,
            1 => (mantissa * 1000.0).round() / 1000.0 + 0.005,
            2 => 9999.995 + (*seed % 10) as f64 * 0.001,
            _ => mantissa * 10f64.powi(exponent as i32 - 5),
        }
    }

    #[test]
    fn table_rows_and_numbers_match_c_printf() {
        let dir = std::env::temp_dir().join(format!("perf-printf-oracle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, exe) = (dir.join("oracle.c"), dir.join("oracle"));
        std::fs::write(&src, ORACLE).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = std::process::Command::new(&cc).arg("-O1").arg("-o").arg(&exe).arg(&src).status();
        assert!(built.is_ok_and(|s| s.success()), "{cc} must build the printf oracle");
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut input = String::new();
        let mut rows = Vec::new();
        for i in 0..3000 {
            let mut m = || {
                let wrong = if i % 5 == 0 { None } else { Some((value(&mut seed) * 1000.0) as u64) };
                Measured {
                    algbw: value(&mut seed),
                    busbw: value(&mut seed),
                    ..Measured::new(value(&mut seed) * 1e-6, 0.0, wrong)
                }
            };
            let (o, p) = (m(), m());
            let row = Row {
                size: i * 977,
                count: i * 13,
                dtype: ["float", "bfloat16", "f8e4m3"][i % 3],
                redop: ["sum", "mulsum", "none"][i % 3],
                root: (i % 4) as i32 - 1,
                out_of_place: o,
                in_place: p,
                timestamp: None,
            };
            let w = |m: &Measured| m.wrong.map_or(-1.0, |w| w as f64);
            let m = (&row.out_of_place, &row.in_place);
            input.push_str(&format!(
                "{} {} {} {} {} {:e} {:e} {:e} {} {:e} {:e} {:e} {}\n",
                row.size,
                row.count,
                row.dtype,
                row.redop,
                row.root,
                m.0.time * 1e6,
                m.0.algbw,
                m.0.busbw,
                w(m.0),
                m.1.time * 1e6,
                m.1.algbw,
                m.1.busbw,
                w(m.1)
            ));
            rows.push(row);
        }
        let mut child = std::process::Command::new(&exe)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Written from a thread: the oracle's output would fill its pipe before it read all.
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            stdin.write_all(input.as_bytes()).unwrap();
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let c = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), rows.len());
        for (row, line) in rows.iter().zip(lines) {
            let ours = format!(
                "{}|{}|{}",
                table_row(row, Columns::default()),
                c_g(row.out_of_place.busbw),
                Json::Double(row.in_place.algbw).render()
            );
            assert_eq!(ours, line, "{row:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
