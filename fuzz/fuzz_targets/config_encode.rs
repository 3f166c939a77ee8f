//! The versioned-struct encoders: `Config::encode` (`ncclConfig_t`) and `CollConfig::encode`
//! (`ncclCollConfig_t`), arbitrary settings against arbitrary loaded versions. Each outcome is
//! checked against a model of NCCL-ABI.md's rules: the error is the one the first broken rule
//! gives (no struct in that version, an unknown field name, minCTAs without maxCTAs, a field
//! newer than the library, a NUL in a string, a reserved profiler tag); a buffer has the
//! library's `size` and says so, the magic, the version's code, every field the library knows
//! at the value set or the header initializer's, and zeros everywhere else.
#![no_main]

use std::ffi::{c_void, CStr};

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::fuzzing::{coll_config_fields, config_fields, FieldFact};
use nccl_trampoline::nccl::{coll_config_size, config_size, CollConfig, Config, Error, Version};

/// `NCCL_CONFIG_UNDEF_INT`.
const UNDEF_INT: i32 = i32::MIN;
const MAGIC: u32 = 0xcafe_beef;

/// Releases where the structs changed, and either side of them.
const VERSIONS: &[(u32, u32, u32)] = &[
    (2, 13, 4),
    (2, 14, 3),
    (2, 16, 5),
    (2, 17, 1),
    (2, 18, 3),
    (2, 26, 2),
    (2, 27, 3),
    (2, 28, 3),
    (2, 29, 2),
    (2, 30, 3),
    (2, 30, 7),
    (2, 31, 2),
    (2, 32, 3),
    (2, 33, 0),
    (3, 0, 0),
];

fn version(u: &mut Unstructured<'_>) -> Result<Option<Version>> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => {
            let &(a, b, c) = u.choose(VERSIONS)?;
            Some(Version::new(a, b, c))
        }
        // A loaded library's version comes from its code.
        1 => Version::from_code(u.arbitrary()?),
        _ => Some(Version::new(2, u.int_in_range(0..=40)?, u.int_in_range(0..=20)?)),
    })
}

/// A string for a name field: short, sometimes with a NUL.
fn text(u: &mut Unstructured<'_>) -> Result<String> {
    let mut s: String = u.arbitrary::<String>()?.chars().take(24).collect();
    if u.ratio(1, 8)? {
        s.push('\0');
    }
    Ok(s)
}

/// Sets `name` in a settings list as the encoders' `set_int` does: the last value wins.
fn set(ints: &mut Vec<(&'static str, i32)>, name: &'static str, value: i32) {
    ints.retain(|(n, _)| *n != name);
    ints.push((name, value));
}

fn known(f: &FieldFact, v: Version, size: usize) -> bool {
    f.since <= v && f.offset + f.width <= size
}

fn int_at(b: &[u8], off: usize) -> i32 {
    i32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

/// The string a pointer field points to.
fn string_at(b: &[u8], off: usize) -> String {
    let p = u64_at(b, off) as usize as *const std::ffi::c_char;
    assert!(!p.is_null(), "a set string field is null");
    // SAFETY: the encoder points the field at a CString the buffer owns, alive while `b` is.
    unsafe { CStr::from_ptr(p) }.to_str().expect("set from a String").to_owned()
}

/// The header, then every byte the known fields do not cover is zero.
fn check_layout(b: &[u8], size: usize, v: Version, fields: &[FieldFact]) {
    assert_eq!(b.len(), size);
    assert_eq!(u64_at(b, 0), size as u64, "size");
    assert_eq!(int_at(b, 8) as u32, MAGIC, "magic");
    assert_eq!(int_at(b, 12), v.code(), "version");
    let mut covered = vec![false; size];
    covered[..16].iter_mut().for_each(|c| *c = true);
    for f in fields.iter().filter(|f| known(f, v, size)) {
        covered[f.offset..f.offset + f.width].iter_mut().for_each(|c| *c = true);
    }
    for (i, (&byte, &c)) in b.iter().zip(&covered).enumerate() {
        assert!(c || byte == 0, "byte {i} of padding or of a field {v} does not know is {byte:#x}");
    }
}

fn config(u: &mut Unstructured<'_>, v: Version) -> Result<()> {
    let table = config_fields();
    let field = |name: &str| *table.iter().find(|f| f.name == name).expect("a field of the table");
    let (mut c, mut ints, mut unknown) = (Config::new(), Vec::new(), Vec::new());
    let (mut net, mut comm) = (None, None);
    for _ in 0..u.int_in_range(0..=6u8)? {
        match u.int_in_range(0..=7u8)? {
            0 => {
                let b: bool = u.arbitrary()?;
                c = c.blocking(b);
                set(&mut ints, "blocking", i32::from(b));
            }
            1 => {
                let (min, max) = (u.arbitrary()?, u.arbitrary()?);
                c = c.ctas(min, max);
                set(&mut ints, "minCTAs", min);
                set(&mut ints, "maxCTAs", max);
            }
            2 => {
                let s = text(u)?;
                c = c.net_name(&s);
                net = Some(s);
            }
            3 => {
                let s = text(u)?;
                c = c.comm_name(&s);
                comm = Some(s);
            }
            4 => {
                let x = u.arbitrary()?;
                c = c.traffic_class(x);
                set(&mut ints, "trafficClass", x);
            }
            5 => {
                let b: bool = u.arbitrary()?;
                c = c.split_share(b);
                set(&mut ints, "splitShare", i32::from(b));
            }
            _ => {
                let name = if u.arbitrary()? { u.choose(&table)?.name.to_string() } else { text(u)? };
                let x = u.arbitrary()?;
                c = c.field(&name, x);
                match table.iter().find(|f| f.name == name && f.int) {
                    Some(f) => set(&mut ints, f.name, x),
                    None => unknown.push(name),
                }
            }
        }
    }
    let got = c.encode(v);
    let Some(size) = config_size(v) else {
        assert_eq!(got.unwrap_err(), Error::Unsupported { symbol: "ncclConfig_t", needs: Version::new(2, 14, 0), loaded: v });
        return Ok(());
    };
    let unsupported = |f: FieldFact| Error::Unsupported { symbol: f.name, needs: f.since, loaded: v };
    let has = |n: &str| ints.iter().any(|(f, _)| *f == n);
    let want = if let Some(name) = unknown.first() {
        Err(Error::UnknownConfigField { name: name.clone() })
    } else if has("minCTAs") != has("maxCTAs") {
        Err(Error::InvalidArgument { what: "minCTAs and maxCTAs must be set together" })
    } else if let Some(f) = ints.iter().map(|(n, _)| field(n)).find(|f| !known(f, v, size)) {
        Err(unsupported(f))
    } else {
        let strings = [("netName", &net), ("commName", &comm)];
        let mut broken = None;
        for (name, s) in strings {
            let Some(s) = s else { continue };
            let f = field(name);
            if !known(&f, v, size) {
                broken = Some(unsupported(f));
            } else if s.contains('\0') {
                broken = Some(Error::NulInConfigString { field: f.name });
            }
            if broken.is_some() {
                break;
            }
        }
        broken.map_or(Ok(()), Err)
    };
    match (got, want) {
        (Ok(buf), Ok(())) => {
            let b = buf.as_bytes();
            check_layout(b, size, v, &table);
            for f in table.iter().filter(|f| known(f, v, size)) {
                let set = ints.iter().find(|(n, _)| *n == f.name).map(|&(_, x)| x);
                match (f.name, f.int) {
                    (_, true) => assert_eq!(int_at(b, f.offset), set.unwrap_or(UNDEF_INT), "{}", f.name),
                    ("netName", _) if net.is_some() => assert_eq!(Some(string_at(b, f.offset)), net),
                    ("commName", _) if comm.is_some() => assert_eq!(Some(string_at(b, f.offset)), comm),
                    _ => assert_eq!(u64_at(b, f.offset), 0, "{}", f.name),
                }
            }
        }
        (Err(e), Err(w)) => assert_eq!(e, w),
        (got, want) => panic!("encode gave {got:?}, the rules say {want:?}"),
    }
    Ok(())
}

fn coll_config(u: &mut Unstructured<'_>, v: Version) -> Result<()> {
    let table = coll_config_fields();
    let field = |name: &str| *table.iter().find(|f| f.name == name).expect("a field of the table");
    let (mut c, mut ints) = (CollConfig::new(), Vec::new());
    let (mut selection, mut tag, mut event) = (None, None, None);
    for _ in 0..u.int_in_range(0..=6u8)? {
        match u.int_in_range(0..=7u8)? {
            0 => {
                let (min, max) = (u.arbitrary()?, u.arbitrary()?);
                c = c.ctas(min, max);
                set(&mut ints, "minCTAs", min);
                set(&mut ints, "maxCTAs", max);
            }
            1 => {
                let x = u.arbitrary()?;
                c = c.nvls_ctas(x);
                set(&mut ints, "nvlsCTAs", x);
            }
            2 => {
                let x = u.arbitrary()?;
                c = c.cga_cluster_size(x);
                set(&mut ints, "cgaClusterSize", x);
            }
            3 => {
                let s = text(u)?;
                c = c.alg_selection(&s);
                selection = Some(s);
            }
            4 => {
                let b: bool = u.arbitrary()?;
                c = c.force_alg_selection(b);
                set(&mut ints, "forceAlgSelection", i32::from(b));
            }
            5 => {
                let x = u.arbitrary()?;
                c = c.cta_policy(x);
                set(&mut ints, "CTAPolicy", x);
            }
            6 => {
                let t: u64 = u.arbitrary()?;
                c = c.user_profiler_tag(t);
                tag = Some(t);
            }
            _ => {
                let e: usize = u.arbitrary()?;
                c = c.launch_completion_event(e as *mut c_void);
                event = Some(e);
            }
        }
    }
    let got = c.encode(v);
    let Some(size) = coll_config_size(v) else {
        let want = Error::Unsupported { symbol: "ncclCollConfig_t", needs: Version::new(2, 31, 2), loaded: v };
        assert_eq!(got.unwrap_err(), want);
        return Ok(());
    };
    let unsupported = |f: FieldFact| Error::Unsupported { symbol: f.name, needs: f.since, loaded: v };
    let has = |n: &str| ints.iter().any(|(f, _)| *f == n);
    let event_field = field("launchCompletionEvent");
    let want = if has("minCTAs") != has("maxCTAs") {
        Err(Error::InvalidArgument { what: "minCTAs and maxCTAs must be set together" })
    } else if let Some(f) = ints.iter().map(|(n, _)| field(n)).find(|f| !known(f, v, size)) {
        Err(unsupported(f))
    } else if let Some(t) = tag.filter(|t| t >> 63 != 0) {
        Err(Error::ReservedProfilerTag { tag: t })
    } else if event.is_some() && !known(&event_field, v, size) {
        Err(unsupported(event_field))
    } else if selection.as_ref().is_some_and(|s| s.contains('\0')) {
        Err(Error::ContainsNul { what: "algSelection" })
    } else {
        Ok(())
    };
    match (got, want) {
        (Ok(buf), Ok(())) => {
            let b = buf.as_bytes();
            check_layout(b, size, v, &table);
            for f in table.iter().filter(|f| known(f, v, size)) {
                let set = ints.iter().find(|(n, _)| *n == f.name).map(|&(_, x)| x);
                let initial = if f.name == "forceAlgSelection" { 1 } else { UNDEF_INT };
                match f.name {
                    _ if f.int => assert_eq!(int_at(b, f.offset), set.unwrap_or(initial), "{}", f.name),
                    "algSelection" if selection.is_some() => assert_eq!(Some(string_at(b, f.offset)), selection),
                    "userProfilerTag" => assert_eq!(u64_at(b, f.offset), tag.unwrap_or(0)),
                    "launchCompletionEvent" => assert_eq!(u64_at(b, f.offset), event.unwrap_or(0) as u64),
                    _ => assert_eq!(u64_at(b, f.offset), 0, "{}", f.name),
                }
            }
        }
        (Err(e), Err(w)) => assert_eq!(e, w),
        (got, want) => panic!("encode gave {got:?}, the rules say {want:?}"),
    }
    Ok(())
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let Some(v) = version(&mut u)? else { return Ok(()) };
    if u.arbitrary()? {
        config(&mut u, v)
    } else {
        coll_config(&mut u, v)
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
