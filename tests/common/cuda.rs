//! The CUDA runtime, loaded at run time and called through the call core like NCCL: enough
//! of it (devices, memory, copies, streams) for the GPU tests. Library: NCCL_TRAMPOLINE_CUDART,
//! else libcudart.so.13 / .12 / .so from the loader.
#![allow(dead_code)]

use std::ffi::c_void;

use nccl_trampoline::{arg, CallPlan, Signature, Type};

pub struct Cuda {
    lib: libloading::Library,
    pub path: String,
}

pub const H2D: i32 = 1;
pub const D2H: i32 = 2;

impl Cuda {
    pub fn load() -> Cuda {
        let mut names: Vec<String> = std::env::var("NCCL_TRAMPOLINE_CUDART").into_iter().collect();
        names.extend(["libcudart.so.13", "libcudart.so.12", "libcudart.so"].map(String::from));
        let mut errors = Vec::new();
        for n in &names {
            // SAFETY: the CUDA runtime's initialisers are safe to run.
            match unsafe { libloading::Library::new(n) } {
                Ok(lib) => return Cuda { lib, path: n.clone() },
                Err(e) => errors.push(format!("{n}: {e}")),
            }
        }
        panic!("no CUDA runtime (set NCCL_TRAMPOLINE_CUDART): {errors:?}");
    }

    /// Calls `int name(args...)` (a cudaError_t function) through a plan; panics on error.
    fn call(&self, name: &str, types: &[Type], args: &[*const c_void]) {
        let plan = CallPlan::new(&Signature::new(types.to_vec(), Some(Type::I32)).unwrap()).unwrap();
        let mut cname = name.as_bytes().to_vec();
        cname.push(0);
        // SAFETY: only the address is taken; the plan has the function's prototype.
        let f = unsafe { *self.lib.get::<*const c_void>(&cname).unwrap_or_else(|e| panic!("{name}: {e}")) };
        let mut r = 0i32;
        // SAFETY: `types` is the prototype of `name`; args point to values of those types.
        unsafe { plan.call(f, args, (&mut r as *mut i32).cast()) }.unwrap();
        assert_eq!(r, 0, "{name} failed with cudaError {r}");
    }

    pub fn device_count(&self) -> i32 {
        let mut n = 0i32;
        let p: *mut i32 = &mut n;
        self.call("cudaGetDeviceCount", &[Type::Pointer], &[arg(&p)]);
        n
    }

    pub fn versions(&self) -> (i32, i32) {
        let (mut d, mut r) = (0i32, 0i32);
        let (pd, pr): (*mut i32, *mut i32) = (&mut d, &mut r);
        self.call("cudaDriverGetVersion", &[Type::Pointer], &[arg(&pd)]);
        self.call("cudaRuntimeGetVersion", &[Type::Pointer], &[arg(&pr)]);
        (d, r)
    }

    pub fn set_device(&self, d: i32) {
        self.call("cudaSetDevice", &[Type::I32], &[arg(&d)]);
    }

    pub fn malloc(&self, bytes: usize) -> *mut c_void {
        let mut p: *mut c_void = std::ptr::null_mut();
        let pp: *mut *mut c_void = &mut p;
        self.call("cudaMalloc", &[Type::Pointer, Type::U64], &[arg(&pp), arg(&bytes)]);
        p
    }

    pub fn free(&self, p: *mut c_void) {
        self.call("cudaFree", &[Type::Pointer], &[arg(&p)]);
    }

    pub fn memcpy(&self, dst: *mut c_void, src: *const c_void, bytes: usize, kind: i32) {
        self.call(
            "cudaMemcpy",
            &[Type::Pointer, Type::Pointer, Type::U64, Type::I32],
            &[arg(&dst), arg(&src), arg(&bytes), arg(&kind)],
        );
    }

    pub fn stream(&self) -> *mut c_void {
        let mut s: *mut c_void = std::ptr::null_mut();
        let ps: *mut *mut c_void = &mut s;
        self.call("cudaStreamCreate", &[Type::Pointer], &[arg(&ps)]);
        s
    }

    pub fn sync(&self, s: *mut c_void) {
        self.call("cudaStreamSynchronize", &[Type::Pointer], &[arg(&s)]);
    }
}
