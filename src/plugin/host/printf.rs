//! C's `printf` formatting for the messages plugins log through NCCL's logger, done in Rust
//! over the logger callback's live variable arguments, so that no message can crash or write
//! through the host: a plugin's format and its strings are read through the kernel (an
//! unreadable address is reported, not dereferenced), `%n` is never honoured, an unknown
//! conversion is shown as written, and a message reads at most [`MAX_CONVERSIONS`] arguments.
//! What a well-formed message prints is what glibc's `printf` prints: the tests compare every
//! integer and floating conversion with glibc's `snprintf`, and `%s`, `%c`, `%p`, `%%` and `*`
//! widths with what it prints (`%a` is not C's: NCCL's logs do not use it).

use core::ffi::c_void;

use crate::engine::callback::VaList;

/// The most bytes read from a format or a `%s` string.
pub const MAX_STRING: usize = 4096;
/// The most conversions that consume arguments in one message; the rest is cut.
pub const MAX_CONVERSIONS: usize = 64;

/// A formatted message and what was wrong with its format, if anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Formatted {
    /// The text.
    pub text: String,
    /// What the format got wrong, one item per fault (`%n`, an unknown conversion, an
    /// unreadable string), empty for a well-formed message.
    pub faults: Vec<String>,
}

/// Where the arguments come from: the live `va_list`, or a list for tests.
pub(crate) trait Args {
    fn int(&mut self) -> i32;
    fn long(&mut self) -> i64;
    fn double(&mut self) -> f64;
    fn pointer(&mut self) -> usize;
}

impl Args for VaList<'_> {
    fn int(&mut self) -> i32 {
        // SAFETY: the format says an int comes next; which argument that is, is the caller's
        // (a wrong format reads another argument's bytes or the caller's stack, never writes).
        unsafe { self.arg::<i32>() }.unwrap_or(0)
    }
    fn long(&mut self) -> i64 {
        // SAFETY: as above.
        unsafe { self.arg::<i64>() }.unwrap_or(0)
    }
    fn double(&mut self) -> f64 {
        // SAFETY: as above.
        unsafe { self.arg::<f64>() }.unwrap_or(0.0)
    }
    fn pointer(&mut self) -> usize {
        // SAFETY: as above.
        unsafe { self.arg::<*const c_void>() }.map_or(0, |p| p as usize)
    }
}

/// Reads the NUL-terminated string at `at`, at most `MAX_STRING` bytes, without trusting the
/// address: `Err(())` when it cannot be read.
pub(crate) fn read_c_string(at: usize) -> Result<Vec<u8>, ()> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    while out.len() < MAX_STRING {
        // Never cross a page in one read: a string may end just before an unmapped page.
        let here = at + out.len();
        let to_page_end = 4096 - here % 4096;
        let want = chunk.len().min(to_page_end).min(MAX_STRING - out.len());
        let got = read_memory(here, &mut chunk[..want])?;
        match chunk[..got].iter().position(|&b| b == 0) {
            Some(end) => {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            None => out.extend_from_slice(&chunk[..got]),
        }
    }
    Ok(out)
}

/// A C string of the plugin's as text (invalid UTF-8 replaced), read as [`read_c_string`]
/// reads it; `None` for NULL or an unreadable address.
pub(crate) fn read_string(at: usize) -> Option<String> {
    read_c_string(at).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Copies memory at `at` into `buf` through the kernel, which reports a bad address
/// (`EFAULT`) instead of faulting: written into a pipe of the host's own and read back.
/// (`process_vm_readv` on the process itself would be one call, but qemu-user passes it the
/// guest's addresses untranslated.)
#[cfg(target_os = "linux")]
fn read_memory(at: usize, buf: &mut [u8]) -> Result<usize, ()> {
    use std::sync::Mutex;
    static PIPE: Mutex<Option<[libc::c_int; 2]>> = Mutex::new(None);
    if at == 0 {
        return Err(());
    }
    let mut pipe = PIPE.lock().map_err(|_| ())?;
    if pipe.is_none() {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(());
        }
        *pipe = Some(fds);
    }
    let [read_end, write_end] = pipe.ok_or(())?;
    // The raw system calls, not the C library's wrappers: a sanitizer's interceptor of `write`
    // would check the address itself, which is the kernel's job here.
    // SAFETY: the kernel reads `buf.len()` bytes at `at` and answers EFAULT for an address it
    // cannot read; nothing in this process dereferences `at`. The pipe is empty (every write
    // is read back below, under the lock) and holds far more than one chunk.
    let written = unsafe { libc::syscall(libc::SYS_write, write_end, at as *const c_void, buf.len()) };
    if written <= 0 {
        return Err(());
    }
    // SAFETY: `buf` is writable for its length; the pipe holds `written` bytes.
    let read = unsafe { libc::syscall(libc::SYS_read, read_end, buf.as_mut_ptr().cast::<c_void>(), written as usize) };
    if read == written {
        Ok(read as usize)
    } else {
        Err(())
    }
}

#[cfg(not(target_os = "linux"))]
fn read_memory(_at: usize, _buf: &mut [u8]) -> Result<usize, ()> {
    Err(())
}

/// One conversion specification.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

/// Formats `format` (read from the plugin's memory) with `args`.
pub(crate) fn format(format_at: usize, args: &mut dyn Args) -> Formatted {
    match read_c_string(format_at) {
        Ok(bytes) => format_bytes(&bytes, args),
        Err(()) => Formatted {
            text: format!("(unreadable format at {format_at:#x})"),
            faults: vec![format!("the format's address {format_at:#x} cannot be read")],
        },
    }
}

/// Formats the bytes of a format string with `args`.
pub(crate) fn format_bytes(fmt: &[u8], args: &mut dyn Args) -> Formatted {
    let mut out = Formatted::default();
    let mut text: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut consumed = 0usize;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            text.push(fmt[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut spec = Spec::default();
        while let Some(&c) = fmt.get(i) {
            match c {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        let mut budget = |out: &mut Formatted| {
            consumed += 1;
            if consumed > MAX_CONVERSIONS {
                out.faults.push(format!("more than {MAX_CONVERSIONS} arguments: the rest is cut"));
                false
            } else {
                true
            }
        };
        if fmt.get(i) == Some(&b'*') {
            if !budget(&mut out) {
                break;
            }
            let w = args.int();
            if w < 0 {
                spec.left = true;
            }
            spec.width = Some(w.unsigned_abs() as usize);
            i += 1;
        } else {
            spec.width = number(fmt, &mut i);
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                if !budget(&mut out) {
                    break;
                }
                let p = args.int();
                spec.precision = usize::try_from(p).ok();
                i += 1;
            } else {
                spec.precision = Some(number(fmt, &mut i).unwrap_or(0));
            }
        }
        // Length: hh h l ll q j z t L. Every integer is read as the promoted width it has.
        let mut long = false;
        while let Some(&c) = fmt.get(i) {
            match c {
                b'l' | b'q' | b'j' | b'z' | b't' | b'L' => long = true,
                b'h' => {}
                _ => break,
            }
            i += 1;
        }
        let half = fmt[start..i].windows(2).any(|w| w == b"hh");
        let short = !half && fmt[start..i].contains(&b'h');
        let Some(&conv) = fmt.get(i) else {
            out.faults.push("the format ends inside a conversion".to_string());
            text.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        if conv == b'%' {
            text.push(b'%');
            continue;
        }
        if !b"diuoxXcspfFeEgGaAn".contains(&conv) {
            out.faults.push(format!("unknown conversion {:?}", String::from_utf8_lossy(&fmt[start..i])));
            text.extend_from_slice(&fmt[start..i]);
            continue;
        }
        if conv == b'n' {
            // Reads its argument (keeps the rest in step) and writes nothing.
            out.faults.push("%n refused: the logger never writes through an argument".to_string());
            if !budget(&mut out) {
                break;
            }
            args.pointer();
            continue;
        }
        if !budget(&mut out) {
            break;
        }
        let body: Vec<u8> = match conv {
            b'd' | b'i' => {
                let v = if long { args.long() } else { i64::from(args.int()) };
                let v = if half {
                    i64::from(v as i8)
                } else if short {
                    i64::from(v as i16)
                } else {
                    v
                };
                signed(v, &spec)
            }
            b'u' | b'o' | b'x' | b'X' => {
                let v = if long { args.long() as u64 } else { u64::from(args.int() as u32) };
                let v = if half {
                    u64::from(v as u8)
                } else if short {
                    u64::from(v as u16)
                } else {
                    v
                };
                unsigned(v, conv, &spec)
            }
            b'c' => vec![args.int() as u8],
            b'p' => match args.pointer() {
                0 => b"(nil)".to_vec(),
                p => format!("{p:#x}").into_bytes(),
            },
            b's' => {
                let at = args.pointer();
                let s = if at == 0 {
                    b"(null)".to_vec()
                } else {
                    read_c_string(at).unwrap_or_else(|()| {
                        out.faults.push(format!("%s at {at:#x} cannot be read"));
                        format!("(unreadable {at:#x})").into_bytes()
                    })
                };
                match spec.precision {
                    Some(p) => s[..p.min(s.len())].to_vec(),
                    None => s,
                }
            }
            _ => float(args.double(), conv, &spec).into_bytes(),
        };
        pad(&mut text, body, conv, &spec);
    }
    out.text = String::from_utf8_lossy(&text).into_owned();
    out
}

fn number(fmt: &[u8], i: &mut usize) -> Option<usize> {
    let start = *i;
    while fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    std::str::from_utf8(&fmt[start..*i]).ok()?.parse().ok().map(|n: usize| n.min(MAX_STRING))
}

fn sign(negative: bool, spec: &Spec) -> &'static str {
    if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

fn signed(v: i64, spec: &Spec) -> Vec<u8> {
    let digits = with_precision(v.unsigned_abs().to_string(), spec);
    format!("{}{digits}", sign(v < 0, spec)).into_bytes()
}

fn unsigned(v: u64, conv: u8, spec: &Spec) -> Vec<u8> {
    let digits = match conv {
        b'o' => format!("{v:o}"),
        b'x' => format!("{v:x}"),
        b'X' => format!("{v:X}"),
        _ => v.to_string(),
    };
    let mut digits = with_precision(digits, spec);
    if spec.alt && v != 0 {
        match conv {
            b'x' => digits.insert_str(0, "0x"),
            b'X' => digits.insert_str(0, "0X"),
            b'o' if !digits.starts_with('0') => digits.insert(0, '0'),
            _ => {}
        }
    }
    digits.into_bytes()
}

/// An integer's digits with C's precision: at least that many, and none for a zero with `.0`.
fn with_precision(digits: String, spec: &Spec) -> String {
    match spec.precision {
        Some(0) if digits == "0" => String::new(),
        Some(p) if p > digits.len() => format!("{}{digits}", "0".repeat(p - digits.len())),
        _ => digits,
    }
}

fn float(v: f64, conv: u8, spec: &Spec) -> String {
    let upper = conv.is_ascii_uppercase();
    let s = if !v.is_finite() {
        let word = if v.is_nan() { "nan" } else { "inf" };
        format!("{}{word}", sign(v.is_sign_negative() && !v.is_nan(), spec))
    } else {
        let p = spec.precision.unwrap_or(6);
        let body = match conv.to_ascii_lowercase() {
            b'f' => format!("{:.p$}", v.abs()),
            b'e' => exponent(v.abs(), p),
            b'a' => format!("{:e}", v.abs()), // hexadecimal floats are not needed by NCCL's logs
            _ => general(v.abs(), p, spec.alt),
        };
        let body = if spec.alt && p == 0 && !body.contains('.') && conv.eq_ignore_ascii_case(&b'f') {
            body + "."
        } else {
            body
        };
        format!("{}{body}", sign(v.is_sign_negative(), spec))
    };
    if upper {
        s.to_uppercase()
    } else {
        s
    }
}

/// `%.pe`: Rust's `1.5e3` as C's `1.500000e+03`.
fn exponent(v: f64, p: usize) -> String {
    let s = format!("{v:.p$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

/// `%g`: C11 7.21.6.1p8.
fn general(v: f64, p: usize, alt: bool) -> String {
    let p = p.max(1);
    let e = if v == 0.0 {
        0
    } else {
        let s = format!("{v:.*e}", p - 1);
        s.split_once('e').and_then(|(_, x)| x.parse::<i64>().ok()).unwrap_or(0)
    };
    let s = if (p as i64) > e && e >= -4 { format!("{v:.*}", (p as i64 - 1 - e) as usize) } else { exponent(v, p - 1) };
    if alt {
        return s;
    }
    // Trailing zeros of the fraction go, and a bare point.
    let (mantissa, exp) = match s.find('e') {
        Some(at) => s.split_at(at),
        None => (s.as_str(), ""),
    };
    let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
    format!("{mantissa}{exp}")
}

fn pad(text: &mut Vec<u8>, body: Vec<u8>, conv: u8, spec: &Spec) {
    let width = spec.width.unwrap_or(0);
    if body.len() >= width {
        text.extend_from_slice(&body);
        return;
    }
    let fill = width - body.len();
    let numeric = b"diuoxXfFeEgGaA".contains(&conv);
    let zero = spec.zero && !spec.left && numeric && (spec.precision.is_none() || !b"diuoxX".contains(&conv));
    if spec.left {
        text.extend_from_slice(&body);
        text.extend(std::iter::repeat(b' ').take(fill));
    } else if zero {
        // Zeros go after the sign and a 0x prefix.
        let prefix = body
            .iter()
            .take_while(|&&b| b == b'-' || b == b'+' || b == b' ')
            .count()
            .max(if body.starts_with(b"0x") || body.starts_with(b"0X") { 2 } else { 0 });
        text.extend_from_slice(&body[..prefix]);
        text.extend(std::iter::repeat(b'0').take(fill));
        text.extend_from_slice(&body[prefix..]);
    } else {
        text.extend(std::iter::repeat(b' ').take(fill));
        text.extend_from_slice(&body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments given as words, as a test's stand-in for a `va_list`.
    pub(crate) enum Arg {
        I(i64),
        D(f64),
        P(usize),
    }
    pub(crate) struct List(pub std::collections::VecDeque<Arg>);
    impl Args for List {
        fn int(&mut self) -> i32 {
            self.long() as i32
        }
        fn long(&mut self) -> i64 {
            match self.0.pop_front() {
                Some(Arg::I(v)) => v,
                Some(Arg::P(p)) => p as i64,
                _ => 0,
            }
        }
        fn double(&mut self) -> f64 {
            match self.0.pop_front() {
                Some(Arg::D(v)) => v,
                _ => 0.0,
            }
        }
        fn pointer(&mut self) -> usize {
            self.long() as usize
        }
    }

    fn f(fmt: &str, args: Vec<Arg>) -> Formatted {
        format_bytes(fmt.as_bytes(), &mut List(args.into()))
    }

    #[test]
    fn what_printf_prints() {
        let s = c"eth0";
        let cases: Vec<(&str, Vec<Arg>, &str)> = vec![
            (
                "NET/Socket : Using [%d]%s:%s<%d>",
                vec![Arg::I(0), Arg::P(s.as_ptr() as usize), Arg::P(s.as_ptr() as usize), Arg::I(0)],
                "NET/Socket : Using [0]eth0:eth0<0>",
            ),
            (
                "%5d|%-5d|%05d|%+d|% d",
                vec![Arg::I(42), Arg::I(42), Arg::I(-42), Arg::I(7), Arg::I(7)],
                "   42|42   |-0042|+7| 7",
            ),
            (
                "%zu %ld %lld %lu",
                vec![Arg::I(1 << 40), Arg::I(-3), Arg::I(i64::MIN), Arg::I(-1)],
                "1099511627776 -3 -9223372036854775808 18446744073709551615",
            ),
            (
                "%x %X %#x %o %#o %08x",
                vec![Arg::I(255), Arg::I(255), Arg::I(255), Arg::I(8), Arg::I(8), Arg::I(0xbeef)],
                "ff FF 0xff 10 010 0000beef",
            ),
            ("%u %hhd %hd", vec![Arg::I(-1), Arg::I(300), Arg::I(70000)], "4294967295 44 4464"),
            (
                "%.3f %f %.0f %e %.2E",
                vec![Arg::D(12.625), Arg::D(0.1), Arg::D(2.5), Arg::D(1500.0), Arg::D(-0.000123)],
                "12.625 0.100000 2 1.500000e+03 -1.23E-04",
            ),
            (
                "%g %g %g %g %.3g",
                vec![Arg::D(100000.0), Arg::D(1000000.0), Arg::D(0.0001), Arg::D(0.5), Arg::D(1.23456)],
                "100000 1e+06 0.0001 0.5 1.23",
            ),
            (
                "%c%c %% %.2s %10s|%-4s|",
                vec![
                    Arg::I(b'o' as i64),
                    Arg::I(b'k' as i64),
                    Arg::P(s.as_ptr() as usize),
                    Arg::P(s.as_ptr() as usize),
                    Arg::P(s.as_ptr() as usize),
                ],
                "ok % et       eth0|eth0|",
            ),
            ("%s %p %p", vec![Arg::P(0), Arg::P(0), Arg::P(0x1000)], "(null) (nil) 0x1000"),
            ("%*d|%-*d|%.*d", vec![Arg::I(4), Arg::I(1), Arg::I(3), Arg::I(2), Arg::I(3), Arg::I(5)], "   1|2  |005"),
        ];
        for (fmt, args, want) in cases {
            let got = f(fmt, args);
            assert_eq!(got.text, want, "{fmt}");
            assert!(got.faults.is_empty(), "{fmt}: {:?}", got.faults);
        }
    }

    /// Against glibc's own `snprintf`, one conversion at a time, over flags, widths,
    /// precisions, lengths and awkward values.
    #[test]
    fn what_glibc_prints_for_each_conversion() {
        fn text(buf: &[u8; 512]) -> String {
            let end = buf.iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&buf[..end]).into_owned()
        }
        let mut buf = [0u8; 512];
        let ints = [0i32, 1, -1, 42, -42, 255, 300, 70000, i32::MAX, i32::MIN];
        let int_formats = [
            "%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%.3d", "%.0d", "%8.3d", "%x", "%X", "%#x", "%o", "%#o",
            "%08x", "%u", "%hhd", "%hd", "%hhu", "%hx", "%-+6d|",
        ];
        for fmt in int_formats {
            for v in ints {
                let c_fmt = std::ffi::CString::new(fmt).unwrap();
                // SAFETY: one int for one int conversion; the buffer holds 512 bytes.
                unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c_fmt.as_ptr(), v) };
                let ours = f(fmt, vec![Arg::I(i64::from(v))]);
                assert_eq!(ours.text, text(&buf), "{fmt} {v}");
            }
        }
        let longs = [0i64, -1, 1 << 40, i64::MIN, i64::MAX];
        for fmt in ["%ld", "%lld", "%lu", "%zu", "%lx", "%#lo", "%20ld|", "%-20lu|", "%.25ld"] {
            for v in longs {
                let c_fmt = std::ffi::CString::new(fmt).unwrap();
                // SAFETY: one long for one long conversion.
                unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c_fmt.as_ptr(), v) };
                assert_eq!(f(fmt, vec![Arg::I(v)]).text, text(&buf), "{fmt} {v}");
            }
        }
        let doubles =
            [0.0f64, -0.0, 1.0, -1.5, 12.625, 0.1, 1e-5, 0.0001, 123456789.0, 1e21, 2.5, 3.5, 1e300, 9.9999999];
        let double_formats = [
            "%f", "%.3f", "%.0f", "%#.0f", "%10.2f|", "%-10.3f|", "%+f", "% f", "%010.3f", "%e", "%.2E", "%.0e",
            "%-12.3e|", "%g", "%.3g", "%#g", "%G", "%.10g", "%+g", "%.0g",
        ];
        for fmt in double_formats {
            for v in doubles {
                let c_fmt = std::ffi::CString::new(fmt).unwrap();
                // SAFETY: one double for one double conversion.
                unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c_fmt.as_ptr(), v) };
                assert_eq!(f(fmt, vec![Arg::D(v)]).text, text(&buf), "{fmt} {v}");
            }
        }
        for v in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            for fmt in ["%f", "%e", "%g", "%F", "%8f|"] {
                let c_fmt = std::ffi::CString::new(fmt).unwrap();
                // SAFETY: as above.
                unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c_fmt.as_ptr(), v) };
                assert_eq!(f(fmt, vec![Arg::D(v)]).text, text(&buf), "{fmt} {v}");
            }
        }
    }

    #[test]
    fn a_malformed_format_is_shown_and_reported_not_obeyed() {
        let got = f("%q %s %n %", vec![Arg::P(8), Arg::P(0xdead)]);
        assert_eq!(got.text, "%q (unreadable 0x8)  %");
        assert_eq!(got.faults.len(), 4, "{:?}", got.faults);
        let many = "%d".repeat(100);
        let got = f(&many, vec![]);
        assert_eq!(got.text, "0".repeat(MAX_CONVERSIONS));
        assert!(got.faults.iter().any(|f| f.contains("more than")));
    }

    #[test]
    fn strings_are_read_without_trusting_their_address() {
        assert_eq!(read_c_string(0), Err(()));
        assert_eq!(read_c_string(8), Err(()));
        assert_eq!(read_c_string(c"abc".as_ptr() as usize), Ok(b"abc".to_vec()));
        let long = vec![b'z'; MAX_STRING * 2];
        assert_eq!(read_c_string(long.as_ptr() as usize).unwrap().len(), MAX_STRING);
    }
}
