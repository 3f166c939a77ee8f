//! The output of `perf`: nccl-tests' table (same columns, widths and number formats), a
//! progress bar on a terminal, and the JSON document.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

/// One measured placement (out-of-place or in-place) of one row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Wall time per iteration, seconds (enqueue through completion).
    pub time: f64,
    /// Host time per iteration spent enqueueing, seconds (nccl-tests' `-C 1` cputime).
    pub cpu: f64,
    /// nccl-tests' algbw and busbw, GB/s, from `time`.
    pub algbw: f64,
    pub busbw: f64,
    /// Wrong elements summed over ranks; `None` when not checked.
    pub wrong: Option<u64>,
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
}

/// nccl-tests' three header lines.
pub fn table_header(cputime: bool) -> String {
    let time = if cputime { "cputime" } else { "time" };
    let mut s = String::new();
    let line = format!("#{:51}{:^33}{:^33}", "", "out-of-place", "in-place");
    writeln!(s, "{}", line.trim_end()).unwrap();
    writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {time:>7}  {:>6}  {:>6}  {:>6}  {time:>7}  {:>6}  {:>6}  {:>6}",
        "size", "count", "type", "redop", "root", "algbw", "busbw", "#wrong", "algbw", "busbw", "#wrong"
    )
    .unwrap();
    writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
    )
    .unwrap();
    s
}

/// nccl-tests' time format: fewer decimals as the number grows.
pub fn format_time(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{us:7.0}")
    } else if us >= 100.0 {
        format!("{us:7.1}")
    } else {
        format!("{us:7.2}")
    }
}

/// One table line.
pub fn table_row(row: &Row, cputime: bool) -> String {
    let mut s = format!("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.size, row.count, row.dtype, row.redop, row.root);
    for m in [&row.out_of_place, &row.in_place] {
        let t = if cputime { m.cpu } else { m.time } * 1e6;
        let wrong = m.wrong.map_or("N/A".to_string(), |w| w.to_string());
        write!(s, "  {}  {:6.2}  {:6.2}  {wrong:>6}", format_time(t), m.algbw, m.busbw).unwrap();
    }
    s
}

/// The closing lines: out-of-bounds count and the average bus bandwidth over every
/// measurement (out-of-place and in-place), as nccl-tests prints them.
pub fn table_footer(rows: &[Row]) -> String {
    let (wrong, avg) = (total_wrong(rows), average_busbw(rows));
    format!(
        "# Out of bounds values : {wrong} {}\n# Avg bus bandwidth    : {avg:.6} \n#\n",
        if wrong == 0 { "OK" } else { "FAILED" }
    )
}

/// Wrong elements over every checked measurement.
pub fn total_wrong(rows: &[Row]) -> u64 {
    rows.iter().flat_map(|r| [r.out_of_place.wrong, r.in_place.wrong]).flatten().sum()
}

/// The mean busbw over every measurement (out-of-place and in-place), nccl-tests' average.
pub fn average_busbw(rows: &[Row]) -> f64 {
    let v: Vec<f64> = rows.iter().flat_map(|r| [r.out_of_place.busbw, r.in_place.busbw]).collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(o, "\\u{:04x}", c as u32).unwrap(),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A JSON number with `decimals` decimals (`null` for infinities and NaN).
fn json_num(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "null".to_string()
    }
}

fn json_measured(m: &Measured) -> String {
    format!(
        "{{\"time_us\": {}, \"cpu_us\": {}, \"algbw\": {}, \"busbw\": {}, \"wrong\": {}}}",
        json_num(m.time * 1e6, 4),
        json_num(m.cpu * 1e6, 4),
        json_num(m.algbw, 4),
        json_num(m.busbw, 4),
        m.wrong.map_or("null".to_string(), |w| w.to_string())
    )
}

/// The JSON document: `fields` (already-encoded key/value pairs: the run's settings) and the
/// rows.
pub fn json_document(fields: &[(&str, String)], rows: &[Row]) -> String {
    let mut s = String::from("{\n");
    for (k, v) in fields {
        writeln!(s, "  {}: {v},", json_str(k)).unwrap();
    }
    s.push_str("  \"results\": [\n");
    for (i, r) in rows.iter().enumerate() {
        write!(
            s,
            "    {{\"size\": {}, \"count\": {}, \"type\": {}, \"redop\": {}, \"root\": {}, \"out_of_place\": {}, \"in_place\": {}}}",
            r.size,
            r.count,
            json_str(r.dtype),
            json_str(r.redop),
            r.root,
            json_measured(&r.out_of_place),
            json_measured(&r.in_place)
        )
        .unwrap();
        s.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    writeln!(s, "  ],\n  \"avg_busbw\": {},\n  \"wrong\": {}\n}}", json_num(average_busbw(rows), 4), total_wrong(rows))
        .unwrap();
    s
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
        let filled = width * self.done / self.total.max(1);
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
        let m = Measured { time: 12.5e-6, cpu: 3.25e-6, algbw: 0.0, busbw: 0.0, wrong: Some(0) };
        Row { size: 8, count: 2, dtype: "float", redop: "sum", root: -1, out_of_place: m, in_place: m }
    }

    #[test]
    fn rows_have_nccl_tests_widths() {
        let line = table_row(&row(), false);
        assert_eq!(
            line,
            "           8             2     float     sum      -1    12.50    0.00    0.00       0    12.50    0.00    0.00       0"
        );
        assert!(table_row(&row(), true).contains("     3.25 "));
        assert_eq!(format_time(123.456), "  123.5");
        assert_eq!(format_time(12345.6), "  12346");
    }

    #[test]
    fn header_columns_line_up_with_rows() {
        let header = table_header(false);
        let names = header.lines().nth(1).unwrap();
        let line = table_row(&row(), false);
        // Every column name ends where its values end.
        for (name, value) in [("count", "2"), ("redop", "sum"), ("#wrong", "0")] {
            let end = names.find(name).unwrap() + name.len();
            assert_eq!(&line[end - value.len()..end], value, "column {name}");
        }
    }

    #[test]
    fn footer_counts_wrong_values() {
        let mut r = row();
        assert!(table_footer(std::slice::from_ref(&r)).contains("Out of bounds values : 0 OK"));
        r.in_place.wrong = Some(3);
        assert!(table_footer(&[r]).contains("Out of bounds values : 3 FAILED"));
    }

    #[test]
    fn json_is_escaped() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        let doc = json_document(&[("collective", json_str("all_reduce"))], &[row()]);
        assert!(doc.contains("\"wrong\": 0\n}"), "{doc}");
        assert!(doc.contains("\"time_us\": 12.5000"), "{doc}");
    }
}
