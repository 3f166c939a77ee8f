//! The comparison: a call through the trampoline against the C compiler's reference caller, on
//! an oracle the caller has loaded.

use std::ffi::c_void;

use super::values::{aligned, pick_bytes, value_ranges, Pattern};
use crate::ctype::types::{Signature, Type};
use crate::engine::plan::CallPlan;

/// What the comparison needs from a loaded oracle: the C runtime of `oracle/runtime.c`
/// and the generated functions.
pub trait OracleRuntime {
    /// The address of a generated function: a callee `name` or its caller `ref_<name>`.
    fn sym(&self, name: &str) -> *const c_void;
    /// Empties the recording buffer.
    fn rec_reset(&self);
    /// The bytes the callees recorded since the last reset.
    fn recording(&self) -> Vec<u8>;
    /// Sets the bytes the callees return.
    fn set_return_bytes(&self, bytes: &[u8]);
}

/// Calls `name` through the trampoline and `ref_<name>` (the C caller) with the same argument
/// bytes, and checks: both recordings equal the argument values byte for byte, both results
/// equal the bytes the callee returned, and the caller's arguments are unchanged although the
/// callee wrote into its by-value copies. Returns a description of the first mismatch.
pub fn check_call(
    oracle: &impl OracleRuntime,
    name: &str,
    sig: &Signature,
    pattern: &mut Pattern,
) -> Result<(), String> {
    let plan = CallPlan::new(sig).map_err(|e| format!("{name}: plan: {e}"))?;
    let args: Vec<Vec<u8>> = sig.args().iter().map(|t| pattern.value(t)).collect();
    let before = args.clone();
    let expected: Vec<u8> = sig.args().iter().zip(&args).flat_map(|(t, b)| pick_bytes(b, &value_ranges(t))).collect();
    let ret_size = sig.ret().map_or(0, Type::size);
    let ret_bytes = sig.ret().map_or_else(Vec::new, |t| pattern.value(t));
    oracle.set_return_bytes(&ret_bytes);
    let arg_ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();

    // Through the trampoline.
    let mut ret_t = aligned(ret_size);
    oracle.rec_reset();
    // SAFETY: `name` was generated from `sig`; arguments and result buffers have its sizes.
    unsafe { plan.call(oracle.sym(name), &arg_ptrs, ret_t.as_mut_ptr().cast()) }
        .map_err(|e| format!("{name}: call: {e}"))?;
    let rec_t = oracle.recording();

    // Through the C compiler.
    let mut ret_c = aligned(ret_size);
    oracle.rec_reset();
    let reference = oracle.sym(&format!("ref_{name}"));
    // SAFETY: `void ref_<name>(void *const *args, void *ret)`, generated with the callee.
    unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const *const c_void, *mut c_void)>(reference)(
            arg_ptrs.as_ptr(),
            ret_c.as_mut_ptr().cast(),
        )
    };
    let rec_c = oracle.recording();

    if rec_c != expected {
        return Err(format!(
            "{name}: the C caller's recording differs from the model (test bug)\n c: {rec_c:02x?}\n m: {expected:02x?}"
        ));
    }
    if rec_t != rec_c {
        let at = rec_t.iter().zip(&rec_c).position(|(a, b)| a != b).unwrap_or(rec_t.len().min(rec_c.len()));
        return Err(format!(
            "{name}: callee received other bytes than from the C caller (first difference at recorded byte {at}; {} vs {} bytes)\n sig: {sig:?}\n trampoline: {rec_t:02x?}\n C:          {rec_c:02x?}",
            rec_t.len(),
            rec_c.len()
        ));
    }
    if args != before {
        return Err(format!("{name}: the caller's argument bytes changed during the call"));
    }
    if let Some(rt) = sig.ret() {
        let ranges = value_ranges(rt);
        // SAFETY: both buffers are at least ret_size bytes.
        let (t, c) = unsafe {
            (
                std::slice::from_raw_parts(ret_t.as_ptr().cast::<u8>(), ret_size),
                std::slice::from_raw_parts(ret_c.as_ptr().cast::<u8>(), ret_size),
            )
        };
        let (t, c, want) = (pick_bytes(t, &ranges), pick_bytes(c, &ranges), pick_bytes(&ret_bytes, &ranges));
        if c != want {
            return Err(format!("{name}: the C caller's result differs from the returned bytes (test bug)"));
        }
        if t != c {
            return Err(format!("{name}: result differs from the C caller's\n sig: {sig:?}\n trampoline: {t:02x?}\n C:          {c:02x?}"));
        }
    }
    Ok(())
}
