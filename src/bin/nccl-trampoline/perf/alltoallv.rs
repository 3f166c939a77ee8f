//! alltoallv's traffic: how many elements each rank sends each peer, as nccl-tests (v2.19.6)
//! src/alltoallv.cu defines them. Two modes, chosen by the environment once per process:
//!
//! - generated (the default): every rank sends the size of the step in all, split between
//!   its peers by their distance in rank order, blended with a uniform split by
//!   `NCCL_TESTS_ALLTOALLV_SPREAD` (0 uniform, 1, the default, fully distance-weighted);
//! - matrix: `NCCL_TESTS_ALLTOALLV_MATRIX_FILE` names a square matrix of bytes (row: sender,
//!   column: receiver), each value times `NCCL_TESTS_ALLTOALLV_MATRIX_SCALE`; the sweep has
//!   one size (`-b` = `-e`), which only has to hold the largest rank's traffic.
//!
//! Every per-peer amount is rounded down to a multiple of 16 bytes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The distance weighting of the generated mode.
pub const SPREAD_VAR: &str = "NCCL_TESTS_ALLTOALLV_SPREAD";
/// The matrix file of the matrix mode.
pub const MATRIX_FILE_VAR: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
/// The factor on every value of the matrix.
pub const MATRIX_SCALE_VAR: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE";

/// Why the alltoallv traffic cannot be set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AlltoallvError {
    /// A variable's value is no number.
    #[error("{var}=`{value}` is not a number")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The matrix file could not be read.
    #[error("reading the alltoallv matrix {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// A matrix value is no non-negative finite number of bytes.
    #[error("alltoallv matrix {path}: row {row} column {col}: `{value}` is not a byte count (a non-negative number)")]
    BadValue {
        /// The file.
        path: PathBuf,
        /// 0-based row.
        row: usize,
        /// 0-based column.
        col: usize,
        /// The text.
        value: String,
    },
    /// A matrix value times the scale is past the address space.
    #[error("alltoallv matrix {path}: row {row} column {col}: `{value}` times the scale is too large")]
    ValueOverflow {
        /// The file.
        path: PathBuf,
        /// 0-based row.
        row: usize,
        /// 0-based column.
        col: usize,
        /// The text.
        value: String,
    },
    /// A row with another number of columns than the first.
    #[error("alltoallv matrix {path}: row {row} has {got} columns, the first row {expected}")]
    RaggedRow {
        /// The file.
        path: PathBuf,
        /// 0-based row.
        row: usize,
        /// The first row's columns.
        expected: usize,
        /// This row's.
        got: usize,
    },
    /// No values.
    #[error("alltoallv matrix {path} is empty")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Rows and columns differ.
    #[error("alltoallv matrix {path} must be square (it is {rows}x{cols})")]
    NotSquare {
        /// The file.
        path: PathBuf,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Fewer rows than ranks.
    #[error("alltoallv matrix {path} is {dim}x{dim}, smaller than the {nranks} ranks of the job")]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// Its dimension.
        dim: usize,
        /// Ranks.
        nranks: usize,
    },
    /// A sweep of sizes with a matrix.
    #[error("the alltoallv matrix sets every size: -b and -e must be equal (e.g. -b 32M -e 32M), not {min} and {max}")]
    MatrixSweep {
        /// `-b`.
        min: u64,
        /// `-e`.
        max: u64,
    },
    /// `-e` below the largest rank's traffic.
    #[error("-e {max} is smaller than the {needed} bytes one rank sends or receives in the alltoallv matrix {path}: raise -e")]
    MaxBelowMatrix {
        /// The file.
        path: PathBuf,
        /// `-e`.
        max: u64,
        /// The largest rank's sent or received bytes.
        needed: u64,
    },
}

/// How alltoallv splits traffic between peers.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// Distance-weighted: `spread` in [0, 1].
    Generated {
        /// 0 uniform, 1 fully distance-weighted.
        spread: f64,
    },
    /// Bytes from rank to rank, from a file.
    Matrix(Matrix),
}

/// A square traffic matrix: `bytes[i * dim + j]` from rank `i` to rank `j`, each a multiple of
/// 16.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    path: PathBuf,
    dim: usize,
    bytes: Vec<usize>,
}

impl Default for Pattern {
    fn default() -> Self {
        Pattern::Generated { spread: 1.0 }
    }
}

/// This process's pattern, from its environment, read once (nccl-tests reads it once per
/// process too: alltoallv.cu:335-346, `AlltoAllvInit`).
pub fn pattern() -> &'static Result<Pattern, AlltoallvError> {
    static PATTERN: OnceLock<Result<Pattern, AlltoallvError>> = OnceLock::new();
    PATTERN.get_or_init(Pattern::from_env)
}

/// A variable's number, as nccl-tests reads it (`strtod` of the whole value:
/// alltoallv.cu:161-176), except that text that is no number is an error here (nccl-tests
/// keeps the default then, silently), and so is NaN (which nccl-tests would keep and then
/// convert to a size, undefined in C).
fn number(var: &'static str, value: Option<&str>, default: f64) -> Result<f64, AlltoallvError> {
    let Some(text) = value else { return Ok(default) };
    match text.trim_start().parse::<f64>() {
        Ok(v) if !v.is_nan() => Ok(v),
        _ => Err(AlltoallvError::NotANumber { var, value: text.to_owned() }),
    }
}

impl Pattern {
    /// The pattern the environment asks for (the three variables).
    pub fn from_env() -> Result<Pattern, AlltoallvError> {
        let var = |name| std::env::var(name).ok();
        let file = std::env::var_os(MATRIX_FILE_VAR).map(PathBuf::from);
        Pattern::from_vars(var(SPREAD_VAR).as_deref(), file.as_deref(), var(MATRIX_SCALE_VAR).as_deref())
    }

    /// The pattern of these variables' values. A matrix file selects the matrix mode.
    pub fn from_vars(
        spread: Option<&str>,
        file: Option<&Path>,
        scale: Option<&str>,
    ) -> Result<Pattern, AlltoallvError> {
        // Out-of-range values are clamped, as alltoallv.cu:170-171 and 178 do.
        let spread = number(SPREAD_VAR, spread, 1.0)?.clamp(0.0, 1.0);
        let scale = number(MATRIX_SCALE_VAR, scale, 1.0)?.max(0.0);
        let Some(path) = file else { return Ok(Pattern::Generated { spread }) };
        let text =
            std::fs::read(path).map_err(|e| AlltoallvError::Read { path: path.to_owned(), reason: e.to_string() })?;
        Matrix::parse(&String::from_utf8_lossy(&text), scale, path).map(Pattern::Matrix)
    }

    /// Checks the pattern against the job and the sizes: a matrix must cover every rank, and
    /// its sweep has one size, at least the largest rank's traffic (alltoallv.cu:339-345,
    /// 555-568 and 579-583). A generated pattern fits any job.
    pub fn check(&self, nranks: usize, min_bytes: u64, max_bytes: u64) -> Result<(), AlltoallvError> {
        let Pattern::Matrix(m) = self else { return Ok(()) };
        if nranks > m.dim {
            return Err(AlltoallvError::TooSmall { path: m.path.clone(), dim: m.dim, nranks });
        }
        let (send, recv) = self.max_counts(0, 1, nranks);
        let needed = send.max(recv) as u64;
        if max_bytes < needed {
            return Err(AlltoallvError::MaxBelowMatrix { path: m.path.clone(), max: max_bytes, needed });
        }
        if min_bytes != max_bytes {
            return Err(AlltoallvError::MatrixSweep { min: min_bytes, max: max_bytes });
        }
        Ok(())
    }

    /// Bytes rank `src` sends rank `dst` when each rank sends `total_bytes` in all (the
    /// generated mode; a matrix ignores it). alltoallv.cu:358-368: the uniform share
    /// `total / n` and the distance share `d * total / (n (n - 1) / 2)`, with `d` the distance
    /// from `src` forward to `dst`, blended by the spread, truncated, then rounded down to 16
    /// bytes; one rank keeps everything (rounded down to 16 bytes).
    pub fn peer_bytes(&self, src: usize, dst: usize, nranks: usize, total_bytes: usize) -> usize {
        match self {
            Pattern::Matrix(m) => m.bytes[src * m.dim + dst],
            Pattern::Generated { spread } => {
                if nranks == 1 {
                    return total_bytes & !15;
                }
                let distance = (dst + nranks - src) % nranks;
                let sum_distances = nranks * (nranks - 1) / 2;
                let uniform = total_bytes as f64 / nranks as f64;
                let weighted = distance as f64 * total_bytes as f64 / sum_distances as f64;
                let bytes = (1.0 - spread) * uniform + spread * weighted;
                (bytes as usize) & !15
            }
        }
    }

    /// The count column and the call's count for `count` elements of `elem_size` bytes: the
    /// per-peer count of a uniform split, rounded down to 16 bytes' worth of elements, in the
    /// generated mode; 0 with a matrix (alltoallv.cu:393-399, `AlltoAllvGetCollByteCount`).
    pub fn param_count(&self, count: usize, elem_size: usize, nranks: usize) -> usize {
        match self {
            Pattern::Generated { .. } => (count / nranks) & !(16 / elem_size - 1),
            Pattern::Matrix(_) => 0,
        }
    }

    /// The largest number of elements any rank sends, and receives, for the call's count
    /// `param` (alltoallv.cu:370-391, `AlltoAllvComputeMaxCounts`: rank 0's total in the
    /// generated mode, where every rank's is the same; the largest row and column sums of the
    /// matrix). Each peer's bytes are divided by the element size first.
    pub fn max_counts(&self, param: usize, elem_size: usize, nranks: usize) -> (usize, usize) {
        let total = param * nranks * elem_size;
        let per = |i, j| self.peer_bytes(i, j, nranks, total) / elem_size;
        match self {
            Pattern::Generated { .. } => {
                let t = (0..nranks).map(|j| per(0, j)).sum();
                (t, t)
            }
            Pattern::Matrix(_) => (0..nranks).fold((0, 0), |(s, r), i| {
                let send: usize = (0..nranks).map(|j| per(i, j)).sum();
                let recv: usize = (0..nranks).map(|j| per(j, i)).sum();
                (s.max(send), r.max(recv))
            }),
        }
    }

    /// Every rank's per-peer element counts for the call's count `param`.
    pub fn counts(&self, param: usize, elem_size: usize, nranks: usize) -> PeerCounts {
        let total = param * nranks * elem_size;
        let n = nranks;
        let count = |i, j| self.peer_bytes(i, j, n, total) / elem_size;
        let mut rows = Vec::with_capacity(n * (n + 1));
        let mut cols = Vec::with_capacity(n * (n + 1));
        for i in 0..n {
            let (mut r, mut c) = (0, 0);
            rows.push(0);
            cols.push(0);
            for j in 0..n {
                r += count(i, j);
                c += count(j, i);
                rows.push(r);
                cols.push(c);
            }
        }
        PeerCounts { nranks: n, rows, cols }
    }
}

impl Matrix {
    /// Parses whitespace-separated numbers, one row a line (blank lines ignored), each times
    /// `scale`, truncated to whole bytes and rounded down to 16 (alltoallv.cu:186-333,
    /// `AlltoAllvReadTrafficMatrix`). The product is truncated exactly (nccl-tests computes it
    /// in `long double`).
    pub fn parse(text: &str, scale: f64, path: &Path) -> Result<Matrix, AlltoallvError> {
        let mut bytes = Vec::new();
        let mut cols = None;
        let mut rows = 0;
        for line in text.split('\n') {
            let tokens: Vec<&str> = line.split_ascii_whitespace().collect();
            if tokens.is_empty() {
                continue;
            }
            for (col, token) in tokens.iter().enumerate() {
                let at = |value: &str| (path.to_owned(), rows, col, value.to_owned());
                let v = match token.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => v,
                    _ => {
                        let (path, row, col, value) = at(token);
                        return Err(AlltoallvError::BadValue { path, row, col, value });
                    }
                };
                match truncate_product(v, scale) {
                    Some(b) => bytes.push(b & !15),
                    None => {
                        let (path, row, col, value) = at(token);
                        return Err(AlltoallvError::ValueOverflow { path, row, col, value });
                    }
                }
            }
            match cols {
                None => cols = Some(tokens.len()),
                Some(c) if c != tokens.len() => {
                    return Err(AlltoallvError::RaggedRow {
                        path: path.to_owned(),
                        row: rows,
                        expected: c,
                        got: tokens.len(),
                    })
                }
                Some(_) => {}
            }
            rows += 1;
        }
        let Some(cols) = cols else { return Err(AlltoallvError::Empty { path: path.to_owned() }) };
        if rows != cols {
            return Err(AlltoallvError::NotSquare { path: path.to_owned(), rows, cols });
        }
        Ok(Matrix { path: path.to_owned(), dim: rows, bytes })
    }

    /// Rows (and columns).
    #[cfg(test)]
    pub fn dim(&self) -> usize {
        self.dim
    }
}

/// `floor(v * scale)` of the exact product, or `None` past `usize`.
fn truncate_product(v: f64, scale: f64) -> Option<usize> {
    let p = v * scale;
    if !p.is_finite() || p >= usize::MAX as f64 {
        return None;
    }
    // The rounding error of the product, exactly (a fused multiply-add): a product rounded up
    // onto a whole number truncates to the one below.
    let err = v.mul_add(scale, -p);
    let floor = p.floor();
    let floor = if floor == p && err < 0.0 { floor - 1.0 } else { floor };
    Some(floor.max(0.0) as usize)
}

/// Every rank's per-peer element counts for one size, with the offsets that place them:
/// `rows[i * (n + 1) + j]` is what rank `i` sends ranks `0..j` (where rank `j`'s part of `i`'s
/// send buffer starts), `cols[j * (n + 1) + i]` what rank `j` receives from ranks `0..i`
/// (where `i`'s part of `j`'s receive buffer starts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerCounts {
    nranks: usize,
    rows: Vec<usize>,
    cols: Vec<usize>,
}

impl PeerCounts {
    /// Elements `src` sends `dst`.
    pub fn count(&self, src: usize, dst: usize) -> usize {
        self.send_offset(src, dst + 1) - self.send_offset(src, dst)
    }

    /// Where `dst`'s elements start in `src`'s send buffer (`dst` = n: `src`'s total).
    pub fn send_offset(&self, src: usize, dst: usize) -> usize {
        self.rows[src * (self.nranks + 1) + dst]
    }

    /// Where `src`'s elements start in `dst`'s receive buffer (`src` = n: `dst`'s total).
    pub fn recv_offset(&self, dst: usize, src: usize) -> usize {
        self.cols[dst * (self.nranks + 1) + src]
    }

    /// Elements `rank` sends in all.
    #[cfg(test)]
    pub fn send_total(&self, rank: usize) -> usize {
        self.send_offset(rank, self.nranks)
    }

    /// Elements `rank` receives in all.
    pub fn recv_total(&self, rank: usize) -> usize {
        self.recv_offset(rank, self.nranks)
    }

    /// Element `i` of `rank`'s receive buffer: (the sender, the element's index in the
    /// sender's send buffer); `None` past what `rank` receives.
    pub fn source(&self, rank: usize, i: usize) -> Option<(usize, usize)> {
        if i >= self.recv_total(rank) {
            return None;
        }
        let starts = &self.cols[rank * (self.nranks + 1)..(rank + 1) * (self.nranks + 1)];
        // The last sender whose part starts at or before `i` (empty parts share a start).
        let src = starts.partition_point(|&s| s <= i) - 1;
        Some((src, self.send_offset(src, rank) + i - starts[src]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated(spread: f64) -> Pattern {
        Pattern::Generated { spread }
    }

    /// Every count `src -> dst`, row by row.
    fn table(p: &Pattern, param: usize, elem_size: usize, n: usize) -> Vec<Vec<usize>> {
        let c = p.counts(param, elem_size, n);
        (0..n).map(|i| (0..n).map(|j| c.count(i, j)).collect()).collect()
    }

    #[test]
    fn generated_counts_follow_the_distance_weighting() {
        let p = generated(1.0);
        // 1 rank: everything to itself, rounded down to 16 bytes.
        assert_eq!(p.param_count(1000, 1, 1), 992);
        assert_eq!(table(&p, 992, 1, 1), [[992]]);
        assert_eq!(p.param_count(1000, 4, 1), 1000 & !3);
        // 2 ranks, 1 MiB of int8: param 512K; total 1M per rank, all of it to the other rank
        // (distance 1 of the sum of distances 1), none to itself.
        let param = p.param_count(1 << 20, 1, 2);
        assert_eq!(param, 1 << 19);
        assert_eq!(table(&p, param, 1, 2), [[0, 1 << 20], [1 << 20, 0]]);
        // 3 ranks, 3000 bytes of float: count 750, param 750/3 = 250 & !3 = 248; total
        // 248*3*4 = 2976 bytes; sum of distances 3: distance 1 gets 992 bytes (248 floats),
        // distance 2 1984 (496).
        let param = p.param_count(750, 4, 3);
        assert_eq!(param, 248);
        assert_eq!(table(&p, param, 4, 3), [[0, 248, 496], [496, 0, 248], [248, 496, 0]]);
        // 8 ranks, 1 MiB of int8: param 131072, total 1 MiB; distance d gets
        // d * 1048576 / 28 bytes, truncated and rounded down to 16.
        let param = p.param_count(1 << 20, 1, 8);
        assert_eq!(param, 131072);
        let want: Vec<usize> = (0..8).map(|d| (d * 1048576 / 28) & !15).collect();
        assert_eq!(want, [0, 37440, 74896, 112336, 149792, 187232, 224688, 262144]);
        let t = table(&p, param, 1, 8);
        for (i, row) in t.iter().enumerate() {
            for (j, &c) in row.iter().enumerate() {
                assert_eq!(c, want[(j + 8 - i) % 8], "{i} -> {j}");
            }
        }
        // Every rank sends and receives the same total, below the step's size.
        let c = p.counts(param, 1, 8);
        let total: usize = want.iter().sum();
        assert_eq!(total, 1048528);
        assert!((0..8).all(|r| c.send_total(r) == total && c.recv_total(r) == total));
        assert_eq!(p.max_counts(param, 1, 8), (total, total));
    }

    #[test]
    fn the_spread_blends_uniform_and_weighted() {
        // Spread 0: uniform, 16-byte multiples.
        let p = generated(0.0);
        assert_eq!(table(&p, 100, 1, 4), vec![vec![96; 4]; 4]);
        // Spread 0.5, 4 ranks, 4096 bytes of int8 each: param 1024, total 4096; uniform 1024,
        // weighted d*4096/6; blend 512 + d*341.33.. -> d=0: 512, 1: 853.33 -> 848,
        // 2: 1194.67 -> 1184, 3: 1536.
        let p = generated(0.5);
        assert_eq!(table(&p, 1024, 1, 4)[0], [512, 848, 1184, 1536]);
        // Doubles: 16 bytes are 2 elements: param 1023/4 = 255 rounds down to 254; total
        // 254*4*8 = 8128 bytes; uniform 2032, weighted d*8128/6; rank 1 -> 0 is distance 3:
        // 1016 + 2032 = 3048 -> 3040 bytes, 380 doubles; -> 1: 1016 -> 1008, 126; -> 2:
        // 1016 + 677.3 -> 1680, 210; -> 3: 1016 + 1354.7 -> 2368, 296.
        assert_eq!(p.param_count(1023, 8, 4), 254);
        assert_eq!(table(&p, 254, 8, 4)[1], [380, 126, 210, 296]);
        // Out-of-range values clamp; text that is no number is refused.
        assert_eq!(Pattern::from_vars(Some("7"), None, None), Ok(generated(1.0)));
        assert_eq!(Pattern::from_vars(Some("-1"), None, None), Ok(generated(0.0)));
        assert_eq!(Pattern::from_vars(None, None, None), Ok(generated(1.0)));
        assert!(matches!(Pattern::from_vars(Some("half"), None, None), Err(AlltoallvError::NotANumber { .. })));
        assert!(matches!(Pattern::from_vars(Some("nan"), None, None), Err(AlltoallvError::NotANumber { .. })));
    }

    #[test]
    fn received_elements_come_from_their_senders_parts() {
        let p = generated(1.0);
        let c = p.counts(248, 4, 3);
        // Rank 1 receives 248 from rank 0 (rank 0's elements 0..248: it sends itself none),
        // nothing from itself, 496 from rank 2 (rank 2's elements 248..744, after its 248 for
        // rank 0).
        assert_eq!(c.recv_total(1), 744);
        assert_eq!(c.source(1, 0), Some((0, 0)));
        assert_eq!(c.source(1, 247), Some((0, 247)));
        assert_eq!(c.source(1, 248), Some((2, 248)));
        assert_eq!(c.source(1, 743), Some((2, 743)));
        assert_eq!(c.source(1, 744), None);
        // Rank 0 receives nothing from itself (an empty part), 496 from rank 1, then rank 2's
        // first 248.
        assert_eq!(c.source(0, 0), Some((1, 0)));
        assert_eq!(c.source(0, 496), Some((2, 0)));
    }

    #[test]
    fn matrices_parse_scale_and_round_down() {
        let path = Path::new("m.txt");
        let m = Matrix::parse("100  200  150\n50   100  75\r\n\n300 150 200\n", 1.0, path).unwrap();
        assert_eq!(m.dim(), 3);
        let p = Pattern::Matrix(m);
        assert_eq!(table(&p, 0, 1, 3), [[96, 192, 144], [48, 96, 64], [288, 144, 192]]);
        // Elements of 4 bytes: bytes / 4 per peer.
        assert_eq!(table(&p, 0, 4, 2), [[24, 48], [12, 24]]);
        assert_eq!(p.param_count(12345, 4, 3), 0);
        // Row sums 432, 208, 624; column sums 432, 432, 400.
        assert_eq!(p.max_counts(0, 1, 3), (624, 432));
        // Only the first nranks rows and columns count.
        assert_eq!(p.max_counts(0, 1, 2), (288, 288));
        // The scale multiplies before rounding: 100 * 1.5 = 150 -> 144.
        let m = Matrix::parse("100 3.3\n1e3 0", 1.5, path).unwrap();
        assert_eq!(Pattern::Matrix(m).peer_bytes(0, 0, 2, 0), 144);
        // 0.7 * 160 is 111.99999999999999289.. exactly, 112.0 in f64: truncated from the exact
        // product, as long double does (then 96 bytes, not 112).
        assert_eq!(truncate_product(0.7, 160.0), Some(111));
        assert_eq!(truncate_product(3.0, 16.0), Some(48));
    }

    #[test]
    fn bad_matrices_are_refused_with_their_place() {
        let path = Path::new("m.txt");
        let err = |text: &str| Matrix::parse(text, 1.0, path).unwrap_err();
        assert_eq!(err(""), AlltoallvError::Empty { path: path.into() });
        assert_eq!(err(" \n\n"), AlltoallvError::Empty { path: path.into() });
        assert_eq!(err("1 2 3\n4 5 6"), AlltoallvError::NotSquare { path: path.into(), rows: 2, cols: 3 });
        assert_eq!(err("1 2\n3"), AlltoallvError::RaggedRow { path: path.into(), row: 1, expected: 2, got: 1 });
        assert_eq!(
            err("1 2\n3 -4"),
            AlltoallvError::BadValue { path: path.into(), row: 1, col: 1, value: "-4".into() }
        );
        assert!(matches!(err("1 x\n3 4"), AlltoallvError::BadValue { row: 0, col: 1, .. }));
        assert!(matches!(err("1 2,\n3 4"), AlltoallvError::BadValue { row: 0, col: 1, .. }));
        assert!(matches!(err("inf 2\n3 4"), AlltoallvError::BadValue { row: 0, col: 0, .. }));
        assert!(matches!(err("1 2\n3 1e30"), AlltoallvError::ValueOverflow { row: 1, col: 1, .. }));
        // A missing file names itself.
        let missing = Path::new("/nonexistent/alltoallv-matrix");
        assert!(matches!(Pattern::from_vars(None, Some(missing), None), Err(AlltoallvError::Read { .. })));
        assert!(matches!(
            Pattern::from_vars(None, Some(missing), Some("x")),
            Err(AlltoallvError::NotANumber { var: MATRIX_SCALE_VAR, .. })
        ));
    }

    #[test]
    fn matrices_check_the_job_and_the_sizes() {
        let path = Path::new("m.txt");
        let p = Pattern::Matrix(Matrix::parse("100 200 150\n50 100 75\n300 150 200", 1.0, path).unwrap());
        assert_eq!(p.check(4, 1024, 1024), Err(AlltoallvError::TooSmall { path: path.into(), dim: 3, nranks: 4 }));
        assert_eq!(
            p.check(3, 600, 600),
            Err(AlltoallvError::MaxBelowMatrix { path: path.into(), max: 600, needed: 624 })
        );
        assert_eq!(p.check(3, 512, 1024), Err(AlltoallvError::MatrixSweep { min: 512, max: 1024 }));
        assert_eq!(p.check(3, 624, 624), Ok(()));
        assert_eq!(p.check(2, 288, 288), Ok(()));
        assert_eq!(generated(1.0).check(1000, 8, 1 << 30), Ok(()));
    }
}
