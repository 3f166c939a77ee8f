//! What a callback's handler sees: its arguments through a checked view ([`CallbackArgs`]) and
//! its result through a checked sink ([`CallbackResult`]). Every read and write is checked
//! against the callback's [`Signature`]: the index, the type (for typed reads) or the byte count
//! (for raw ones); a mismatch is a typed [`Error`], never a read of the wrong bytes.

use core::mem::MaybeUninit;

use super::frame::Record;
use super::plan::CallbackPlan;
use super::va::VaList;
use super::value::CValue;
use crate::ctype::error::{Error, TypeDescription};
use crate::ctype::types::{Signature, Type};

/// The arguments of one call of a [`Callback`](crate::Callback), read where the C caller placed
/// them (registers saved by the entry, the caller's stack arguments, or the caller's private
/// copies) as the ABI module says a call places them. Valid during the handler only.
pub struct CallbackArgs<'a> {
    pub(super) record: &'a Record,
    pub(super) plan: &'a CallbackPlan,
    pub(super) signature: &'a Signature,
}

impl CallbackArgs<'_> {
    /// The number of arguments (the signature's).
    pub fn len(&self) -> usize {
        self.plan.args.len()
    }

    /// True for a signature without arguments.
    pub fn is_empty(&self) -> bool {
        self.plan.args.is_empty()
    }

    /// The callback's signature.
    pub fn signature(&self) -> &Signature {
        self.signature
    }

    /// The variable arguments of a variadic callback, from the first one: C's `va_start`.
    /// Each call starts a new list at the first variable argument. [`Error::NotVariadic`] for
    /// a callback whose signature is not variadic.
    pub fn va_list(&self) -> Result<VaList<'_>, Error> {
        let va = self.plan.va.ok_or(Error::NotVariadic)?;
        let r = self.record;
        // SAFETY: the record is the live one of this call, and the plan's `va` was made for the
        // callback's signature with the record's ABI; the record contract gives the three
        // addresses (on x86-64 the vector registers follow the integer ones, asserted in
        // `frame`); the list borrows `self`, so it lives no longer than the call.
        Ok(unsafe { VaList::start(va, r.saved_int_regs(), r.saved_vec_regs(), r.stack_args()) })
    }

    fn ty(&self, index: usize) -> Result<&Type, Error> {
        self.signature.args().get(index).ok_or(Error::ArgumentIndex { index, count: self.len() })
    }

    /// Copies the bytes of argument `index`, `sizeof` its type, into `out`, which must have
    /// exactly that length ([`Error::ValueSize`] otherwise; [`Error::ArgumentIndex`] for an
    /// index past the last argument). Bytes no register or stack slot carries (padding of a
    /// struct passed in registers, the padding of an x87 `long double` in memory is passed as
    /// the caller left it) are zero, or as the caller left them in memory.
    pub fn read_bytes(&self, index: usize, out: &mut [u8]) -> Result<(), Error> {
        let size = self.ty(index)?.size();
        if out.len() != size {
            return Err(Error::ValueSize { expected: size, got: out.len() });
        }
        out.fill(0);
        for piece in &self.plan.args[index] {
            let (dst, len) = (piece.dst as usize, piece.len as usize);
            // SAFETY: the record is the live one of the call C made with the signature the plan
            // was made from (the `Callback`'s contract with C), so every location the plan
            // names holds its bytes: a saved register, the caller's stack arguments, or (by
            // reference) the address of the caller's private copy of `len` bytes. `dst + len`
            // lies inside the argument (CallbackPlan::covers), so inside `out`.
            unsafe {
                let mut src = self.record.arg_location(piece.from);
                if piece.by_reference {
                    src = src.cast::<*const u8>().read_unaligned();
                }
                core::ptr::copy_nonoverlapping(src, out.as_mut_ptr().add(dst), len);
            }
        }
        Ok(())
    }

    /// Argument `index` as `T`, whose C type must be the signature's exactly
    /// ([`Error::CallbackArgumentType`] otherwise: an `int32_t` is not read as a `u32`, a
    /// `uint64_t` may be read as `u64` or `usize`).
    pub fn get<T: CValue>(&self, index: usize) -> Result<T, Error> {
        let ty = self.ty(index)?;
        let want = T::c_type();
        if *ty != want {
            return Err(Error::CallbackArgumentType { index, expected: ty.description(), got: want.description() });
        }
        if let [p] = self.plan.args[index][..] {
            if p.dst == 0 && !p.by_reference && p.len as usize == core::mem::size_of::<T>() {
                // SAFETY: the whole value at one location of the live record (as in read_bytes),
                // of T's size; every bit pattern is a valid T (CValue).
                return Ok(unsafe { self.record.arg_location(p.from).cast::<T>().read_unaligned() });
            }
        }
        let mut value = MaybeUninit::<T>::zeroed();
        // SAFETY: T's C type is the argument's (checked), so size_of::<T>() is its size (the
        // CArg contract); the slice covers the whole value.
        let bytes = unsafe { core::slice::from_raw_parts_mut(value.as_mut_ptr().cast::<u8>(), ty.size()) };
        self.read_bytes(index, bytes)?;
        // SAFETY: every byte is initialised (zeroed, then written), and every bit pattern is a
        // valid T (CValue).
        Ok(unsafe { value.assume_init() })
    }
}

/// Where a handler puts its result. Before the handler runs it holds zero bytes, so a handler
/// that sets nothing returns zero (or a null pointer, or +0.0); `set` and `set_bytes` may be
/// called more than once, the last one wins.
pub struct CallbackResult<'a> {
    /// Where the bytes go: a buffer the dispatcher then moves into the result registers, or
    /// the caller's memory for a result returned through a hidden address.
    pub(super) dst: *mut u8,
    pub(super) ty: Option<&'a Type>,
}

impl CallbackResult<'_> {
    /// The result type (`None` for `void`).
    pub fn c_type(&self) -> Option<&Type> {
        self.ty
    }

    /// Sets the result to `value`, whose C type must be the signature's result type exactly
    /// ([`Error::CallbackResultType`] otherwise, `void` included).
    pub fn set<T: CValue>(&mut self, value: T) -> Result<(), Error> {
        let want = T::c_type();
        match self.ty {
            Some(ty) if *ty == want => {
                // SAFETY: `dst` is valid for writes of the result's size (the dispatcher's
                // buffer or the caller's result memory), which is size_of::<T>() (the CArg
                // contract for the checked type).
                unsafe { self.dst.cast::<T>().write_unaligned(value) };
                Ok(())
            }
            ty => Err(Error::CallbackResultType {
                expected: ty.map_or(TypeDescription::Void, Type::description),
                got: want.description(),
            }),
        }
    }

    /// Sets the result to `bytes`, `sizeof` the result type ([`Error::ValueSize`] otherwise;
    /// a `void` result takes no bytes).
    pub fn set_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let size = self.ty.map_or(0, Type::size);
        if bytes.len() != size {
            return Err(Error::ValueSize { expected: size, got: bytes.len() });
        }
        // SAFETY: as in `set`: `dst` is valid for `size` bytes.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.dst, size) };
        Ok(())
    }
}
