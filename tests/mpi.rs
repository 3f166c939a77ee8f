//! MPI through the call core, against a C stand-in built with each ABI's handle types
//! (tests/c/fake_mpi.c): the ABI is detected from what the library exports, the handles land
//! as that ABI's C compiler passes them, MPI_Init runs only if the program had not, MPI_Finalize
//! only for what this crate initialised, and a broadcast that never completes times out
//! without finalizing. The real Open MPI and MPICH run under mpirun in scripts/test.sh.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nccl_trampoline::launch::Error;
use nccl_trampoline::launch::{Mpi, MpiAbi};

/// The tests share the stand-ins' state: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The stand-in built for `flavour`, once per process: a library rebuilt at the same path
/// while the loader still holds the old one would be two objects (the crate loads the file
/// checked, by descriptor; a plain `dlopen` of the path finds the old one by its name).
fn stand_in(flavour: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, p)) = built.iter().find(|(f, _)| f == flavour) {
        return p.clone();
    }
    let dir = common::work_dir(&format!("fake-mpi-{flavour}"));
    let path = common::build_shared_with(
        &dir,
        &format!("fakempi_{flavour}"),
        &[common::repo_file("tests/c/fake_mpi.c")],
        &[&format!("-DFAKE_ABI_{}", flavour.to_uppercase())],
    );
    built.push((flavour.to_string(), path.clone()));
    path
}

/// The stand-in's test controls.
struct Controls {
    lib: libloading::Library,
}

impl Controls {
    fn open(path: &PathBuf) -> Controls {
        // SAFETY: the stand-in this test built; already loaded by Mpi::load_from.
        Controls { lib: unsafe { libloading::Library::new(path) }.unwrap() }
    }

    fn configure(&self, rank: i32, size: i32, initialized: bool, stall: bool) {
        // SAFETY: `void fake_mpi_configure(int, int, int, int)` in tests/c/fake_mpi.c.
        unsafe {
            let f = self.lib.get::<extern "C" fn(i32, i32, i32, i32)>(b"fake_mpi_configure\0").unwrap();
            f(rank, size, initialized as i32, stall as i32)
        }
    }

    /// (MPI_Init calls, MPI_Finalize calls, pending requests).
    fn counts(&self) -> (i32, i32, i32) {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: `void fake_mpi_counts(int *, int *, int *)`.
        unsafe {
            let f = self.lib.get::<extern "C" fn(*mut i32, *mut i32, *mut i32)>(b"fake_mpi_counts\0").unwrap();
            f(&mut a, &mut b, &mut c);
        }
        (a, b, c)
    }
}

fn pattern() -> Vec<u8> {
    (0..128).map(|i| (i * 5 + 1) as u8).collect()
}

#[test]
fn every_abi_is_detected_and_its_handles_land_as_c_passes_them() {
    let _g = SERIAL.lock().unwrap();
    for (flavour, abi) in [("ompi", MpiAbi::OpenMpi), ("mpich", MpiAbi::Mpich), ("standard", MpiAbi::Standard)] {
        let path = stand_in(flavour);
        let mpi = Mpi::load_from(path.to_str().unwrap()).unwrap();
        let c = Controls::open(&path);
        assert_eq!(mpi.abi(), abi, "{flavour}");
        assert!(!mpi.library_version().is_empty());

        // Rank 3 of 4, MPI not initialised by the program: this session initialises it, the
        // handles are accepted (a wrong one is an MPI error), the broadcast lands.
        c.configure(3, 4, false, false);
        let mut s = mpi.session().unwrap();
        assert!(s.initialized_here());
        assert_eq!((s.rank().unwrap(), s.size().unwrap()), (3, 4), "{flavour}: MPI_COMM_WORLD as the ABI spells it");
        let mut buf = vec![0u8; 128];
        s.broadcast(&mut buf, 0, Duration::from_secs(5)).unwrap();
        assert_eq!(buf, pattern(), "{flavour}");
        s.finalize().unwrap();
        assert_eq!(c.counts(), (1, 1, 0), "{flavour}: one MPI_Init, one MPI_Finalize");

        // The program initialised MPI itself: no MPI_Init, no MPI_Finalize.
        c.configure(0, 2, true, false);
        let mut s = mpi.session().unwrap();
        assert!(!s.initialized_here());
        let mut buf = vec![9u8; 128];
        s.broadcast(&mut buf, 0, Duration::from_secs(5)).unwrap();
        assert_eq!(buf, vec![9u8; 128], "{flavour}: the root's buffer is its own");
        drop(s);
        assert_eq!(c.counts(), (0, 0, 0), "{flavour}");

        // Finalized MPI cannot start again.
        c.configure(0, 2, false, false);
        mpi.session().unwrap().finalize().unwrap();
        let err = mpi.session().unwrap_err();
        assert!(err.to_string().contains("finalized"), "{err}");
    }
}

#[test]
fn a_broadcast_that_never_completes_times_out_and_mpi_is_not_finalized() {
    let _g = SERIAL.lock().unwrap();
    let path = stand_in("mpich");
    let mpi = Mpi::load_from(path.to_str().unwrap()).unwrap();
    let c = Controls::open(&path);
    c.configure(1, 2, false, true);
    let mut s = mpi.session().unwrap();
    let mut buf = vec![0u8; 128];
    let start = Instant::now();
    let err = s.broadcast(&mut buf, 0, Duration::from_millis(200)).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert!(matches!(err, Error::RendezvousTimeout { .. }), "{err}");
    drop(s);
    // The request is still pending (its buffers leaked for MPI), so MPI_Finalize was not called.
    assert_eq!(c.counts(), (1, 0, 1));
}

#[test]
fn an_unknown_abi_is_refused_with_its_version() {
    let _g = SERIAL.lock().unwrap();
    let path = stand_in("unknown");
    let err = Mpi::load_from(path.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(&err, Error::MpiLibrary { detail, .. } if detail.contains("unknown MPI ABI") && detail.contains("nobody has heard of")),
        "{err}"
    );
    let err = Mpi::load_from("/nonexistent/libmpi.so.40").unwrap_err();
    assert!(matches!(err, Error::MpiNotFound { .. }), "{err}");
}
