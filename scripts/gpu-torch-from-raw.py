#!/usr/bin/env python3
"""PyTorch's own NCCL communicator, all-reduced through nccl-trampoline (the recipe of the
README's "Adopting a communicator (PyTorch, C++)"; docs/adr/0029-adopting-communicators.md).

Run under torchrun, one process per GPU:

    torchrun --standalone --nproc_per_node N scripts/gpu-torch-from-raw.py [path/libtorch_allreduce.so]

Each rank makes the NCCL process group, runs one collective (torch creates its communicator
then), takes the ncclComm_t (ProcessGroupNCCL._comm_ptr()), and calls the Rust library built
from examples/torch_allreduce.rs through ctypes, which adopts it as borrowed with the NCCL
torch loaded and all-reduces: several dtypes and sizes, out of place and in place, on the
current stream and on a side stream. Every result is checked in Python against the sum over the
ranks. Then torch's own all-reduce runs on the same communicator, and the process group is
destroyed normally: torch's destroy of a communicator we had freed would crash or hang here.

One line per rank at the end: "PASS ...", "FAIL ..." or "SKIP ..." (no GPU, no torch, a torch
without the API). Exit status: 0 for PASS and SKIP, 1 for FAIL.
"""
import ctypes
import os
import sys
import time
import traceback

# ncclDataType_t (nccl.h)
NCCL_TYPES = {
    "int8": 0, "uint8": 1, "int32": 2, "int64": 4,
    "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9,
}
SIZES = [1, 1000, 12345, 1 << 20]


def rank_tag():
    return f"rank {os.environ.get('RANK', '?')}/{os.environ.get('WORLD_SIZE', '?')}"


def say(word, text):
    print(f"{word} {rank_tag()}: {text}", flush=True)


def find_library(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    candidates = ([argv[1]] if len(argv) > 1 else []) + [
        os.environ.get("TORCH_ALLREDUCE_LIB", ""),
        os.path.join(root, ".device-bin/torch/libtorch_allreduce.so"),
        os.path.join(root, "target/release/examples/libtorch_allreduce.so"),
    ]
    for c in candidates:
        if c and os.path.isfile(c):
            return os.path.abspath(c)
    return None


def loaded_nccl_files():
    """The libnccl files mapped into this process (what Nccl::loaded chooses from)."""
    files = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 6 and os.path.basename(parts[5]).startswith(("libnccl.so", "librccl.so")):
                    if parts[5] not in files:
                        files.append(parts[5])
    except OSError:
        pass
    return files


def main(argv):
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - any import failure means: no torch here
        say("SKIP", f"torch cannot be imported: {e}")
        return 0
    if "RANK" not in os.environ or "LOCAL_RANK" not in os.environ:
        say("SKIP", "not started by torchrun (RANK/LOCAL_RANK unset): torchrun --nproc_per_node N " + argv[0])
        return 0
    if not torch.cuda.is_available():
        say("SKIP", "no CUDA GPU visible to torch")
        return 0
    local_rank, rank, world = int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if torch.cuda.device_count() <= local_rank:
        say("SKIP", f"local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible)")
        return 0
    lib_path = find_library(argv)
    if lib_path is None:
        say("FAIL", "libtorch_allreduce.so not found: build it with `cargo build --release --example torch_allreduce` "
                    "and pass its path (or stage it in .device-bin/torch/)")
        return 1

    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    version = torch.cuda.nccl.version()
    version = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    print(f"{rank_tag()}: torch {torch.__version__}, CUDA {torch.version.cuda}, torch's NCCL {version}, "
          f"GPU {torch.cuda.get_device_name(device)}, "
          f"TORCH_NCCL_USE_COMM_NONBLOCKING={os.environ.get('TORCH_NCCL_USE_COMM_NONBLOCKING', '')}", flush=True)
    try:
        dist.init_process_group("nccl")
    except Exception:  # noqa: BLE001
        print(traceback.format_exc(), flush=True)
        say("FAIL", "torch's init_process_group('nccl') failed (before anything of ours ran)")
        return 1
    checks, failures = 0, []
    try:
        # One collective: torch creates its NCCL communicator now.
        warm = torch.ones(4, device=device)
        dist.all_reduce(warm)
        torch.cuda.synchronize()
        backend = dist.group.WORLD._get_backend(device)
        if not hasattr(backend, "_comm_ptr"):
            say("SKIP", f"this torch's {type(backend).__name__} has no _comm_ptr()")
            return 0
        comm = backend._comm_ptr()
        print(f"{rank_tag()}: ncclComm_t {comm:#x}; NCCL files mapped: {loaded_nccl_files()}", flush=True)

        lib = ctypes.CDLL(lib_path)
        all_reduce = lib.nt_torch_all_reduce
        all_reduce.restype = ctypes.c_int
        all_reduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                               ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        describe = lib.nt_torch_describe
        describe.restype = ctypes.c_int
        describe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        err = ctypes.create_string_buffer(1024)

        if describe(comm, err, len(err)) != 0:
            failures.append(f"describe: {err.value.decode(errors='replace')}")
        else:
            text = err.value.decode(errors="replace")
            print(f"{rank_tag()}: adopted: {text}", flush=True)
            expected = f": rank {rank} of {world} on device {local_rank},"
            if expected not in text:
                failures.append(f"describe says {text!r}, expected {expected!r}")
            checks += 1

        # A null handle is refused in words, not a crash.
        if all_reduce(None, None, None, 0, 7, None, err, len(err)) != 1 or b"null" not in err.value:
            failures.append(f"a null communicator was not refused: {err.value!r}")
        checks += 1

        side = torch.cuda.Stream(device=device)
        for name, code in NCCL_TYPES.items():
            dtype = getattr(torch, name)
            for count in SIZES:
                for in_place in (False, True):
                    for on_side in (False, True):
                        if on_side and (in_place or count != SIZES[-1]):
                            continue  # the side stream once per type, on the largest size
                        base = torch.arange(count, device=device, dtype=torch.int64) % 7
                        send = (base + rank + 1).to(dtype)
                        recv = send if in_place else torch.full_like(send, 99)
                        want = (base * world + world * (world + 1) // 2).to(dtype)
                        stream = side if on_side else torch.cuda.current_stream(device)
                        if on_side:
                            side.wait_stream(torch.cuda.current_stream(device))
                        started = time.perf_counter()
                        r = all_reduce(comm, send.data_ptr(), recv.data_ptr(), count, code, stream.cuda_stream, err, len(err))
                        what = f"{name} x{count}{' in place' if in_place else ''}{' on a side stream' if on_side else ''}"
                        if r != 0:
                            failures.append(f"{what}: status {r}: {err.value.decode(errors='replace')}")
                            continue
                        stream.synchronize()
                        took = time.perf_counter() - started
                        if not torch.equal(recv.cpu(), want.cpu()):
                            bad = (recv != want).nonzero()
                            first = bad[0].item() if bad.numel() else -1
                            failures.append(f"{what}: {bad.numel()} wrong elements, first at {first}: "
                                            f"{recv[first].item()} != {want[first].item()}")
                        else:
                            checks += 1
                        if count == SIZES[-1] and not in_place and not on_side:
                            print(f"{rank_tag()}: {what}: {took * 1e3:.2f} ms with the check's sync", flush=True)

        # torch's own collective on the same communicator still works.
        again = torch.full((1000,), float(rank + 1), device=device)
        dist.all_reduce(again)
        torch.cuda.synchronize()
        if not torch.all(again == world * (world + 1) / 2):
            failures.append("torch's own all_reduce after ours gave a wrong sum")
        else:
            checks += 1
    except Exception:  # noqa: BLE001 - reported as the rank's failure
        failures.append("exception:\n" + traceback.format_exc())
    finally:
        # torch destroys its communicator: had we destroyed it, this would crash or hang.
        started = time.perf_counter()
        try:
            dist.destroy_process_group()
            print(f"{rank_tag()}: destroy_process_group returned in {time.perf_counter() - started:.2f} s", flush=True)
        except Exception:  # noqa: BLE001
            failures.append("destroy_process_group:\n" + traceback.format_exc())
    if failures:
        for f in failures:
            print(f"{rank_tag()}: {f}", flush=True)
        say("FAIL", f"{len(failures)} failed, {checks} passed")
        return 1
    say("PASS", f"{checks} checks (all-reduce through nccl-trampoline on torch's communicator, "
                f"{len(NCCL_TYPES)} types, sizes {SIZES}, in place and on a side stream; torch's destroy after)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
