//! The device API's host side (2.28.3+): resource requirements for device-side barriers and
//! the LL all-to-all (`ncclLsaBarrierCreateRequirement`, `ncclGinBarrierCreateRequirement`,
//! `ncclLLA2ACalcSlots`, `ncclLLA2ACreateRequirement`), and what a window looks like from the
//! device (`ncclGet*DevicePointer` 2.29.2, `ncclGet*DeviceLeInfo` 2.31.2).
//!
//! `ncclDevCommCreate` / `ncclDevCommDestroy` are bound in the table (raw) but have no safe
//! form here: `ncclDevCommRequirements_t` and `ncclDevComm_t` are device-layout structs that
//! changed in every release from 2.28 to 2.32 without a size/version header, so a safe form
//! needs a per-version model of both.

use core::ffi::c_void;

use crate::engine::typed::ValueAt;
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::shared::Allow;
use crate::nccl::library::load::Nccl;
use crate::nccl::ops::memory::Registration;
use crate::nccl::types::device_api::MultimemHandle;
use crate::nccl::types::device_api::Team;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;

/// `ncclDevResourceRequirements_t` as 2.28.7 through 2.32.3 declare it (56 bytes; 2.28.3's
/// 32-byte form is its prefix, so a buffer of this size serves both).
#[repr(C)]
#[derive(Debug)]
pub struct DevResourceRequirements {
    /// `next`: the list the requirements of one `ncclDevCommCreate` are chained in.
    pub next: *mut DevResourceRequirements,
    /// `bufferSize`: bytes of device memory the resource needs.
    pub buffer_size: usize,
    /// `bufferAlign`.
    pub buffer_align: usize,
    /// `outBufferHandle`: where `ncclDevCommCreate` stores the buffer's handle (into the
    /// resource's handle).
    pub out_buffer_handle: *mut u32,
    /// `ginSignalCount` (2.28.7).
    pub gin_signal_count: i32,
    /// `ginCounterCount` (2.28.7).
    pub gin_counter_count: i32,
    /// `outGinSignalStart` (2.28.7).
    pub out_gin_signal_start: *mut u32,
    /// `outGinCounterStart` (2.28.7).
    pub out_gin_counter_start: *mut u32,
}

static_assertions::const_assert_eq!(core::mem::size_of::<DevResourceRequirements>(), 56);

impl Default for DevResourceRequirements {
    fn default() -> Self {
        DevResourceRequirements {
            next: core::ptr::null_mut(),
            buffer_size: 0,
            buffer_align: 0,
            out_buffer_handle: core::ptr::null_mut(),
            gin_signal_count: 0,
            gin_counter_count: 0,
            out_gin_signal_start: core::ptr::null_mut(),
            out_gin_counter_start: core::ptr::null_mut(),
        }
    }
}

/// `ncclLsaBarrierHandle_t`: `{ ncclDevResourceHandle_t bufHandle; int nBarriers; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LsaBarrierHandle {
    /// `bufHandle` (set by `ncclDevCommCreate`).
    pub buf_handle: u32,
    /// `nBarriers`.
    pub n_barriers: i32,
}

/// `ncclGinBarrierHandle_t`: `{ ncclGinSignal_t signal0; ncclDevResourceHandle_t unused; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GinBarrierHandle {
    /// `signal0`.
    pub signal0: u32,
    /// `unused`.
    pub unused: u32,
}

/// `ncclLLA2AHandle_t`: `{ ncclDevResourceHandle_t bufHandle; uint32_t nSlots; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlA2aHandle {
    /// `bufHandle` (set by `ncclDevCommCreate`).
    pub buf_handle: u32,
    /// `nSlots`.
    pub n_slots: u32,
}

/// A resource's handle and its requirement, as `nccl*CreateRequirement` filled them: the
/// requirement's `outBufferHandle` points into the handle, so both are boxed (they keep their
/// addresses when this value moves) and live together.
#[derive(Debug)]
pub struct ResourceRequirement<H> {
    handle: Box<H>,
    requirement: Box<DevResourceRequirements>,
}

impl<H> ResourceRequirement<H> {
    /// The handle (its buffer handle is set once `ncclDevCommCreate` ran).
    pub fn handle(&self) -> &H {
        &self.handle
    }

    /// The requirement NCCL wrote.
    pub fn requirement(&self) -> &DevResourceRequirements {
        &self.requirement
    }

    /// The requirement, to chain into an `ncclDevCommRequirements_t` for `ncclDevCommCreate`
    /// (valid while `self` lives).
    pub fn as_raw(&mut self) -> *mut DevResourceRequirements {
        &mut *self.requirement
    }
}

/// Where a window's bytes live for a CFT load/store engine: `(leId, leOffset)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeInfo {
    /// `ncclCftLeId`.
    pub le_id: u32,
    /// The offset in that engine's mapping.
    pub le_offset: usize,
}

/// NCCL's result as `Ok` or the facade's error for `sym`.
fn checked(
    nccl: &Nccl,
    r: NcclResult,
    sym: crate::nccl::library::functions::Sym,
    comm: *mut c_void,
) -> Result<(), Error> {
    if r.is_success() {
        Ok(())
    } else {
        Err(nccl.failure(sym, r, comm))
    }
}

impl Nccl {
    /// `ncclLLA2ACalcSlots` (2.28.3): the slots an LL all-to-all needs for `max_elts` elements
    /// of `max_elt_size` bytes (NCCL: `maxElts * divUp(maxEltSize, 8)`).
    pub fn lla2a_calc_slots(&self, max_elts: i32, max_elt_size: i32) -> Result<i32, Error> {
        // SAFETY: plain integers; the function only computes.
        unsafe { self.functions().lla2a_calc_slots.call(self, (max_elts, max_elt_size)) }
    }

    /// `ncclLLA2ACreateRequirement` (2.28.3): the device buffer an LL all-to-all of `n_blocks`
    /// blocks and `n_slots` slots needs.
    pub fn lla2a_requirement(&self, n_blocks: i32, n_slots: i32) -> Result<ResourceRequirement<LlA2aHandle>, Error> {
        let mut out = ResourceRequirement { handle: Box::default(), requirement: Box::default() };
        let (h, q): (*mut LlA2aHandle, *mut DevResourceRequirements) = (&mut *out.handle, &mut *out.requirement);
        let f = &self.functions().lla2a_create_requirement;
        // SAFETY: both out-pointers are valid for the structs NCCL writes (the requirement at
        // its largest, 56 bytes).
        let r = unsafe { f.call(self, (n_blocks, n_slots, h.cast(), q.cast())) }?;
        checked(self, r, f.sym(), core::ptr::null_mut())?;
        Ok(out)
    }

    /// `ncclLsaBarrierCreateRequirement` (2.28.3): the device buffer `n_barriers` load/store
    /// barriers over `team` need. `team` is passed BY VALUE.
    pub fn lsa_barrier_requirement(
        &self,
        team: &Team,
        n_barriers: i32,
    ) -> Result<ResourceRequirement<LsaBarrierHandle>, Error> {
        let mut out = ResourceRequirement { handle: Box::default(), requirement: Box::default() };
        let (h, q): (*mut LsaBarrierHandle, *mut DevResourceRequirements) = (&mut *out.handle, &mut *out.requirement);
        let f = &self.functions().lsa_barrier_create_requirement;
        // SAFETY: the team is read during the call; both out-pointers are valid.
        let r = unsafe { f.call(self, (ValueAt::new(team), n_barriers, h.cast(), q.cast())) }?;
        checked(self, r, f.sym(), core::ptr::null_mut())?;
        Ok(out)
    }
}

impl Communicator {
    /// `ncclGinBarrierCreateRequirement` (2.28.7): the resources `n_barriers` network
    /// (GIN) barriers over `team` need. `team` is passed BY VALUE.
    pub fn gin_barrier_requirement(
        &self,
        team: &Team,
        n_barriers: i32,
    ) -> Result<ResourceRequirement<GinBarrierHandle>, Error> {
        let mut out = ResourceRequirement { handle: Box::default(), requirement: Box::default() };
        let (h, q): (*mut GinBarrierHandle, *mut DevResourceRequirements) = (&mut *out.handle, &mut *out.requirement);
        let nccl = &self.shared.nccl;
        let f = &nccl.functions().gin_barrier_create_requirement;
        let team = ValueAt::new(team);
        // SAFETY: this communicator's handle, under its call lock; valid out-pointers.
        let r =
            unsafe { self.shared.call(f, (self.shared.handle(), team, n_barriers, h.cast(), q.cast()), Allow::Ready) }?;
        checked(nccl, r, f.sym(), self.shared.handle())?;
        Ok(out)
    }
}

impl Communicator {
    /// `ncclDevCommCreate` (2.28.3) on raw structs: fills the `ncclDevComm_t` at `out` for
    /// `reqs`.
    ///
    /// # Safety
    ///
    /// `reqs` must point to an `ncclDevCommRequirements_t` and `out` to an `ncclDevComm_t` of
    /// the LOADED library's header (their layouts differ between releases), with every
    /// requirement chained in valid until the call returns.
    pub unsafe fn dev_comm_create_raw(&self, reqs: *const c_void, out: *mut c_void) -> Result<(), Error> {
        let f = &self.shared.nccl.functions().dev_comm_create;
        // SAFETY: the caller's contract; this communicator's handle under its call lock.
        unsafe { self.call_checked(f, (self.shared.handle(), reqs, out)) }
    }

    /// `ncclDevCommDestroy` (2.28.3) of a device communicator made by
    /// [`dev_comm_create_raw`](Self::dev_comm_create_raw).
    ///
    /// # Safety
    ///
    /// `dev_comm` must point to an `ncclDevComm_t` this communicator made and that no kernel
    /// uses any more; it is destroyed once.
    pub unsafe fn dev_comm_destroy_raw(&self, dev_comm: *const c_void) -> Result<(), Error> {
        let f = &self.shared.nccl.functions().dev_comm_destroy;
        // SAFETY: the caller's contract; this communicator's handle under its call lock.
        unsafe { self.call_checked(f, (self.shared.handle(), dev_comm)) }
    }
}

/// The window-query entry points on a [`Registration`] that is a window: one line each gives
/// the method, the function of the NCCL table it calls, and its arguments between the window
/// and the out-pointer.
macro_rules! device_pointers {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $function:ident ( $( $arg:ident : $ty:ty => $conv:expr ),* );
    )*) => {
        impl Registration<'_> {
            $(
                $(#[$doc])*
                pub fn $name(&self, offset: usize, $( $arg: $ty ),*) -> Result<*mut c_void, Error> {
                    let window = self.window_handle()?;
                    let nccl = &self.comm.shared.nccl;
                    let f = &nccl.functions().$function;
                    let mut out: *mut c_void = core::ptr::null_mut();
                    let out_ptr: *mut *mut c_void = &mut out;
                    // SAFETY: one of this communicator's windows (NCCL checks the offset
                    // against it), under the communicator's call lock; `out_ptr` valid.
                    let r = unsafe { self.comm.shared.call(f, (window, offset, $( $conv, )* out_ptr), Allow::Ready) }?;
                    checked(nccl, r, f.sym(), self.comm.shared.handle())?;
                    Ok(out)
                }
            )*
        }
    };
}

device_pointers! {
    /// `ncclGetLsaMultimemDevicePointer` (2.29.2): the multicast address of byte `offset` of
    /// this window over the load/store team.
    fn lsa_multimem_device_pointer = get_lsa_multimem_device_pointer();
    /// `ncclGetMultimemDevicePointer` (2.29.2): the address of byte `offset` in the multicast
    /// mapping `multimem` (passed BY VALUE).
    fn multimem_device_pointer = get_multimem_device_pointer(multimem: &MultimemHandle => ValueAt::new(multimem));
    /// `ncclGetLsaDevicePointer` (2.29.2): the address of byte `offset` of load/store peer
    /// `lsa_rank`'s buffer of this window.
    fn lsa_device_pointer = get_lsa_device_pointer(lsa_rank: i32 => lsa_rank);
    /// `ncclGetPeerDevicePointer` (2.29.2): as [`lsa_device_pointer`](Self::lsa_device_pointer)
    /// by world rank (null where `peer` is not reachable by load/store).
    fn peer_device_pointer = get_peer_device_pointer(peer: i32 => peer);
}

/// The LE-info queries (2.31.2): one line each as for `device_pointers!`.
macro_rules! le_infos {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $function:ident ( $( $arg:ident : $ty:ty => $conv:expr ),* );
    )*) => {
        impl Registration<'_> {
            $(
                $(#[$doc])*
                pub fn $name(&self, offset: usize, $( $arg: $ty ),*) -> Result<LeInfo, Error> {
                    let window = self.window_handle()?;
                    let nccl = &self.comm.shared.nccl;
                    let f = &nccl.functions().$function;
                    let (mut le_id, mut le_offset) = (0u32, 0usize);
                    let (id_ptr, off_ptr): (*mut u32, *mut usize) = (&mut le_id, &mut le_offset);
                    // SAFETY: as for the device pointers; both out-pointers valid.
                    let r = unsafe { self.comm.shared.call(f, (window, offset, $( $conv, )* id_ptr, off_ptr), Allow::Ready) }?;
                    checked(nccl, r, f.sym(), self.comm.shared.handle())?;
                    Ok(LeInfo { le_id, le_offset })
                }
            )*
        }
    };
}

le_infos! {
    /// `ncclGetMultimemDeviceLeInfo` (2.31.2).
    fn multimem_le_info = get_multimem_device_le_info();
    /// `ncclGetCftDeviceLeInfo` (2.31.2) for CFT peer `peer_cft` of `cft_team` (BY VALUE).
    fn cft_le_info = get_cft_device_le_info(peer_cft: i32 => peer_cft, cft_team: &Team => ValueAt::new(cft_team));
    /// `ncclGetPeerDeviceLeInfo` (2.31.2) for world rank `peer_world`.
    fn peer_le_info = get_peer_device_le_info(peer_world: i32 => peer_world);
}

impl Registration<'_> {
    /// The window handle, or a refusal for a buffer registration.
    fn window_handle(&self) -> Result<*mut c_void, Error> {
        if self.window {
            Ok(self.handle)
        } else {
            Err(Error::NotAWindow { operation: "a device-pointer query" })
        }
    }
}
