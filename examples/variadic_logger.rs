//! A variadic logger of NCCL's logger type, made at run time:
//! `void (*)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
//! const char *fmt, ...)`, the function NCCL hands every plugin. Its handler formats the message
//! with the C library's `vsnprintf`, called through the call core with the callback's live
//! `va_list`. No C compiler: the logger is then called through the core as a variadic
//! function, as NCCL would call it.
//!
//! Run: `cargo run --example variadic_logger`

use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, Mutex};

use nccl_trampoline::{arg, CallPlan, Callback, Error, Signature, Type};

/// NCCL's `ncclDebugLogLevel` names (include/nccl_common.h).
const LEVELS: [&str; 6] = ["NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: the C library is already loaded into this process.
    let libc = unsafe { libloading::Library::new("libc.so.6") }?;
    // SAFETY: only the address is taken; it is called through a plan with vsnprintf's prototype.
    let vsnprintf: *const c_void = unsafe { *libc.get::<*const c_void>(b"vsnprintf\0")? };
    let vsnprintf = vsnprintf as usize;

    // The named parameters only: the variable ones come through the handler's va_list.
    let logger_type =
        Signature::variadic(5, vec![Type::I32, Type::U64, Type::Pointer, Type::I32, Type::Pointer], None)?;
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let printed = lines.clone();
    let logger = match Callback::new(&logger_type, move |args, _| {
        let (level, flags, file, line, fmt) = (
            args.get::<i32>(0).unwrap(),
            args.get::<u64>(1).unwrap(),
            args.get::<*const c_char>(2).unwrap(),
            args.get::<i32>(3).unwrap(),
            args.get::<*const c_char>(4).unwrap(),
        );
        // vsnprintf(buf, size, fmt, ap): the va_list's type is the ABI's (a pointer to the
        // x86-64 tag, AAPCS64's 32-byte struct by value, riscv64's pointer).
        let mut ap = args.va_list().unwrap().into_c();
        let vsnprintf_type =
            Signature::new(vec![Type::Pointer, Type::U64, Type::Pointer, ap.c_type()], Some(Type::I32)).unwrap();
        let plan = CallPlan::new(&vsnprintf_type).unwrap();
        let mut buf = [0 as c_char; 256];
        let (out, size) = (buf.as_mut_ptr(), buf.len() as u64);
        let mut written = 0i32;
        // SAFETY: vsnprintf's prototype; `buf` holds `size` bytes; `fmt` and the variable
        // arguments are the caller's, which match (the logger's contract with its callers).
        unsafe {
            plan.call(
                vsnprintf as *const c_void,
                &[arg(&out), arg(&size), arg(&fmt), ap.arg()],
                (&mut written as *mut i32).cast(),
            )
        }
        .unwrap();
        // SAFETY: vsnprintf terminated the text inside `buf`; `file` is the caller's C string.
        let (text, file) = unsafe { (CStr::from_ptr(buf.as_ptr()), CStr::from_ptr(file)) };
        let level = LEVELS.get(level as usize).copied().unwrap_or("?");
        let line =
            format!("NCCL {level} {}:{line} [flags {flags:#x}] {}", file.to_string_lossy(), text.to_string_lossy());
        println!("{line}");
        printed.lock().unwrap().push(line);
    }) {
        Ok(logger) => logger,
        Err(e @ Error::CallbacksUnsupported { .. }) => {
            println!("{e}: nothing to show on this target");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };

    // NCCL's calls: the logger as a variadic function, named arguments then the variable ones.
    let log = |level: i32, line: i32, fmt: &CStr, variable: &[(Type, *const c_void)]| -> Result<(), Error> {
        let named = [Type::I32, Type::U64, Type::Pointer, Type::I32, Type::Pointer];
        let types = named.iter().cloned().chain(variable.iter().map(|(t, _)| *t)).collect();
        let plan = CallPlan::new(&Signature::variadic(5, types, None)?)?;
        let (flags, file, fmt) = (0x10u64, c"net.cc".as_ptr(), fmt.as_ptr());
        let mut argv = vec![arg(&level), arg(&flags), arg(&file), arg(&line), arg(&fmt)];
        argv.extend(variable.iter().map(|(_, p)| *p));
        // SAFETY: the logger's type, with variable arguments matching `fmt`'s conversions.
        unsafe { plan.call(logger.as_ptr(), &argv, std::ptr::null_mut()) }
    };
    let (dev, name, addr) = (0i32, c"eth0".as_ptr(), c"10.0.0.7".as_ptr());
    log(
        3,
        225,
        c"NET/Socket : Using [%d]%s:%s<%d>",
        &[(Type::I32, arg(&dev)), (Type::Pointer, arg(&name)), (Type::Pointer, arg(&addr)), (Type::I32, arg(&dev))],
    )?;
    let (bytes, ms, ops) = (1u64 << 33, 12.625f64, -3i64);
    log(
        2,
        310,
        c"%zu bytes in %.3f ms, %ld ops, %d%%",
        &[(Type::U64, arg(&bytes)), (Type::F64, arg(&ms)), (Type::I64, arg(&ops)), (Type::I32, arg(&dev))],
    )?;
    log(4, 7, c"no variable arguments", &[])?;
    drop(logger);

    let expected = [
        "NCCL INFO net.cc:225 [flags 0x10] NET/Socket : Using [0]eth0:10.0.0.7<0>",
        "NCCL WARN net.cc:310 [flags 0x10] 8589934592 bytes in 12.625 ms, -3 ops, 0%",
        "NCCL ABORT net.cc:7 [flags 0x10] no variable arguments",
    ];
    assert_eq!(*lines.lock().unwrap(), expected);
    Ok(())
}
