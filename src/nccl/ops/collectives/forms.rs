//! How each form of a collective is written: `collectives!`, which reads the table in
//! `collectives.rs` and writes, from each row,
//!
//! - the raw form on device pointers (`all_reduce_raw`), `unsafe`: the row's NCCL function
//!   called through the one enqueue path, with what the watchdog records;
//! - the raw per-collective-config form (`all_reduce_config_raw`): the row's `nccl*Config`
//!   function (2.31.2) with an `ncclCollConfig_t` written for the loaded library;
//! - for each of the row's safe forms: the safe form on typed buffers (`all_reduce`, outside a
//!   group); the held form it calls (`all_reduce_held`: the checks, the buffers' accesses and
//!   the enqueue, returning the access guards); the group-scope form (`GroupScope::all_reduce`,
//!   which keeps those guards until the group has launched the work); and, where the row has
//!   one, the safe per-collective-config form (`all_reduce_config`);
//! - a unit test that the C names and versions the docs state are those of the functions called.
//!
//! Each form is one arm. A safe form's signature depends on its buffers, so the safe, held and
//! group-scope forms have one arm per signature (`send -> recv`, `send`, and one buffer written:
//! `in place` or `recv`); the length rules are arms of `@rule`, each with its check and its
//! sentence. The generated code names what it uses plainly: the names resolve in the table's
//! module, which imports them.

/// The forms of every collective of a table; see the table (`collectives.rs`) for a row.
macro_rules! collectives {
    // The table as `collectives.rs` writes it. Every row is passed on to `@forms` with each of
    // its parts as one token tree, so that the forms can take row-wide parts inside the
    // repetition over the row's safe forms.
    ($(
        $(#[doc = $what:literal])*
        $name:ident $title:literal {
            raw: $raw:ident calls $field:ident $c_name:literal $(since $since:literal)?;
            $(config raw: $config_raw:ident calls $config_field:ident $config_c_name:literal
                since $config_since:literal;)?
            $(no config $no_config:ident;)?
            buffers: $($buffer:ident),+; count: $count:ident; arguments: $arguments:tt; watchdog peer: $peer:expr;
            sizes: $sizes:literal;
            $(safe: $safe:ident held $held:ident $shape:tt,
                $(safe config $safe_config:ident)? $(no safe $no_safe_config:ident)?;)*
            $(no safe $no_safe:ident;)?
        }
    )*) => {
        collectives! { @forms $({
            $name $title [$($what)*]
            raw [$raw $field $c_name [$($since)?]]
            config [$($config_raw $config_field $config_c_name $config_since)?] [$($no_config)?]
            call [$($buffer),+] $count $arguments ($peer) $sizes
            safe [$([$safe $held $shape [$($safe_config)?] [$($no_safe_config)?]])*] [$($no_safe)?]
        })* }
    };

    // Every form, one impl block each (so that rustdoc lists them by form).
    (@forms $({
        $name:ident $title:literal $what:tt
        raw $raw:tt
        config $config:tt $no_config:tt
        call $buffers:tt $count:ident $arguments:tt $peer:tt $sizes:literal
        safe [$($safe:tt)*] $no_safe:tt
    })*) => {
        $(
            collectives!(@stated $name "`config raw:` line" $config $no_config);
            collectives!(@stated $name "`safe:` line" [$($safe)*] $no_safe);
        )*

        /// The raw forms, on device pointers: the caller vouches for the buffers and the stream.
        impl Communicator {
            $( collectives!(@raw $what $raw $buffers $count $arguments $peer $sizes); )*
        }

        /// The raw per-collective-config forms (NCCL 2.31.2's `nccl*Config` functions).
        impl Communicator {
            $( collectives!(@config_raw $config $raw $buffers $count $arguments $peer); )*
        }

        /// The safe forms, on typed device buffers, checked for length, device and stream, and
        /// held until the operation is enqueued.
        impl Communicator {
            $($(
                collectives!(@safe $safe $name $title $what $arguments);
                collectives!(@held $safe $name $raw $buffers $arguments);
            )*)*
        }

        /// The safe per-collective-config forms (outside a group, as the other safe forms): the
        /// same checks as their plain forms, then the `nccl*Config` call with `config` written
        /// for the loaded library.
        impl Communicator {
            $($( collectives!(@safe_config $safe $name $title $config $buffers $arguments); )*)*
        }

        impl<'scope> GroupScope<'scope, '_> {
            $($( collectives!(@group $safe $arguments); )*)*
        }

        #[cfg(test)]
        mod tests {
            use super::collectives;
            use crate::nccl::library::functions::{Functions, SYMBOLS};

            /// `since` as the table's rows write it.
            fn version(since: Option<(u32, u32, u32)>) -> String {
                let (major, minor, patch) = since.expect("every NCCL function has a since");
                format!("{major}.{minor}.{patch}")
            }

            /// The C names and versions the rows give their docs are those of the functions of
            /// NCCL's table that their forms call.
            #[test]
            fn rows_name_the_functions_they_call() {
                let unbound: Vec<Option<crate::foreign::symbols::Entry>> = SYMBOLS.iter().map(|_| None).collect();
                // SAFETY: nothing is bound, so nothing can be called.
                let functions = unsafe { Functions::bind(&unbound) }.unwrap();
                $( collectives!(@test functions $raw $config); )*
            }
        }
    };

    // A row says whether it has a part (`config raw:`, `safe:`) or that it has none.
    (@stated $name:ident $part:literal [$($has:tt)+] []) => {};
    (@stated $name:ident $part:literal [] [$none:ident]) => {};
    (@stated $name:ident $part:literal $has:tt $none:tt) => {
        compile_error!(concat!(
            "collective `", stringify!($name), "`: exactly one of a ", $part, " or its `no ...;` line"
        ));
    };

    // The raw form.
    (@raw [$($what:literal)*] [$raw:ident $field:ident $c_name:literal [$($since:literal)?]]
        [$($buffer:ident),+] $count:ident ($($arg:ident: $ty:ty),*) ($peer:expr) $sizes:literal) => {
        #[doc = concat!("`", $c_name, "`", $(" (", $since, ")",)? " on raw device pointers.")]
        #[doc = ""]
        $(#[doc = $what])*
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = ""]
        #[doc = concat!($sizes, ", in device memory of this communicator's GPU, valid until `stream` runs the \
            operation; `stream` must be a valid stream of that device.")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $raw(
            &self,
            $($buffer: collectives!(@pointer $buffer),)+
            $count: usize,
            dtype: DataType,
            $($arg: $ty,)*
            stream: *mut c_void,
        ) -> Result<(), Error> {
            let function = &self.shared.nccl.functions().$field;
            let op = OpInfo { name: Nccl::name(function.sym()), count: $count, data_type: dtype, peer: $peer };
            // SAFETY: the caller's contract (this method's); `comm` is this communicator's live
            // handle, read under the call lock.
            unsafe { self.enqueue(function, |comm| ($($buffer,)+ $count, dtype, $($arg,)* comm, stream), stream, op) }
        }
    };

    // A raw argument's type, from its name.
    (@pointer send) => { *const c_void };
    (@pointer recv) => { *mut c_void };

    // The raw per-collective-config form, where the row has one.
    (@config_raw [] $($row:tt)*) => {};
    (@config_raw [$config_raw:ident $field:ident $c_name:literal $since:literal] [$raw:ident $($plain:tt)*]
        [$($buffer:ident),+] $count:ident ($($arg:ident: $ty:ty),*) ($peer:expr)) => {
        #[doc = concat!("`", $c_name, "` (", $since, "): [`", stringify!($raw), "`](Self::", stringify!($raw),
            ") with `config`, an `ncclCollConfig_t` written for the loaded library.")]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = ""]
        #[doc = concat!("As [`", stringify!($raw), "`](Self::", stringify!($raw), "); a launch-completion event \
            in `config` must be a live CUDA event of this device.")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $config_raw(
            &self,
            $($buffer: collectives!(@pointer $buffer),)+
            $count: usize,
            dtype: DataType,
            $($arg: $ty,)*
            config: &CollConfig,
            stream: *mut c_void,
        ) -> Result<(), Error> {
            let nccl = &self.shared.nccl;
            let function = &nccl.functions().$field;
            if !nccl.has_sym(function.sym()) {
                return Err(nccl.unsupported(function.sym()));
            }
            let buf = config.encode(nccl.version())?;
            let cfg = buf.as_ptr();
            let op = OpInfo { name: Nccl::name(function.sym()), count: $count, data_type: dtype, peer: $peer };
            // SAFETY: the caller's contract (this method's); `comm` is this communicator's live
            // handle, read under the call lock; `buf` outlives the call (NCCL reads the config
            // during it).
            unsafe {
                self.enqueue(function, |comm| ($($buffer,)+ $count, dtype, $($arg,)* comm, stream, cfg), stream, op)
            }
        }
    };

    // The safe form: outside a group, the held form with its guards dropped at once.
    (@safe [$safe:ident $held:ident [send -> recv: $($rule:tt)+] $($config:tt)*]
        $name:ident $title:literal $what:tt ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@safe_doc $title [send -> recv: $($rule)+] $what $safe)]
        #[allow(clippy::too_many_arguments)]
        pub fn $safe<T: NcclScalar, S: Stream>(
            &self,
            send: &impl DeviceBuffer<T>,
            recv: &mut impl DeviceBufferMut<T>,
            $($arg: $ty,)*
            stream: &S,
        ) -> Result<(), Error> {
            grouped::refuse_safe_in_group()?;
            self.$held(send, recv, $($arg,)* stream).map(drop)
        }
    };
    (@safe [$safe:ident $held:ident [send] $($config:tt)*] $name:ident $title:literal $what:tt
        ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@safe_doc $title [send] $what $safe)]
        pub fn $safe<T: NcclScalar, S: Stream>(
            &self,
            buf: &impl DeviceBuffer<T>,
            $($arg: $ty,)*
            stream: &S,
        ) -> Result<(), Error> {
            grouped::refuse_safe_in_group()?;
            self.$held(buf, $($arg,)* stream).map(drop)
        }
    };
    // One buffer written: `[in place]` or `[recv]`.
    (@safe [$safe:ident $held:ident $written:tt $($config:tt)*] $name:ident $title:literal $what:tt
        ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@safe_doc $title $written $what $safe)]
        pub fn $safe<T: NcclScalar, S: Stream>(
            &self,
            buf: &mut impl DeviceBufferMut<T>,
            $($arg: $ty,)*
            stream: &S,
        ) -> Result<(), Error> {
            grouped::refuse_safe_in_group()?;
            self.$held(buf, $($arg,)* stream).map(drop)
        }
    };

    // A safe form's rustdoc, from the row's title, the buffers and their rule, and the row's
    // description.
    (@safe_doc $title:literal $shape:tt [$($what:literal)*] $safe:ident) => {
        concat!(
            $title, " ", collectives!(@shape_doc $shape), ".\n\n",
            $($what, "\n",)*
            "\nOutside a group only; inside one use [`GroupScope::", stringify!($safe),
            "`](crate::nccl::GroupScope::", stringify!($safe), ")."
        )
    };
    (@shape_doc [send -> recv: $($rule:tt)+]) => {
        concat!("of typed device buffers: ", collectives!(@rule doc $($rule)+))
    };
    (@shape_doc [in place]) => { "in place, on one typed device buffer" };
    (@shape_doc [send]) => { "of one typed device buffer, all of it" };
    (@shape_doc [recv]) => { "into one typed device buffer, all of it" };

    // The held form: the checks, the buffers' accesses and the raw call; the access guards
    // returned, for the caller to drop once the work is launched (at once outside a group, at
    // its end inside a `GroupScope`).
    (@held [$safe:ident $held:ident [send -> recv: $($rule:tt)+] $($config:tt)*]
        $name:ident [$raw:ident $($plain:tt)*] $buffers:tt ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@held_doc $safe)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $held<'b, T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
            &self,
            send: &'b B,
            recv: &'b mut M,
            $($arg: $ty,)*
            stream: &'b S,
        ) -> Result<(B::Guard<'b>, M::Guard<'b>), Error> {
            collectives!(@two_buffers self $name send recv stream [$($rule)+] $buffers $raw($($arg,)*))
        }
    };
    (@held [$safe:ident $held:ident [send] $($config:tt)*] $name:ident [$raw:ident $($plain:tt)*] $buffers:tt
        ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@held_doc $safe)]
        pub(crate) fn $held<'b, T: NcclScalar, B: DeviceBuffer<T>, S: Stream>(
            &self,
            buf: &'b B,
            $($arg: $ty,)*
            stream: &'b S,
        ) -> Result<B::Guard<'b>, Error> {
            self.check_access(stream, &[(concat!(stringify!($name), " buffer"), buf.device(), buf.stream())])?;
            let n = buf.len();
            let (p, read) = buf.device_ptr(stream)?;
            // SAFETY: the buffer trait's contract.
            unsafe { self.$raw(p, n, T::DATA_TYPE, $($arg,)* stream.as_raw()) }?;
            Ok(read)
        }
    };
    // One buffer written: `[in place]` or `[recv]`.
    (@held [$safe:ident $held:ident $written:tt $($config:tt)*] $name:ident [$raw:ident $($plain:tt)*] $buffers:tt
        ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@held_doc $safe)]
        pub(crate) fn $held<'b, T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
            &self,
            buf: &'b mut M,
            $($arg: $ty,)*
            stream: &'b S,
        ) -> Result<M::Guard<'b>, Error> {
            collectives!(@one_buffer self $name buf stream $buffers $raw($($arg,)*))
        }
    };
    (@held_doc $safe:ident) => {
        concat!("[`", stringify!($safe), "`](Self::", stringify!($safe), ")'s checks and enqueue, returning the \
            buffers' access guards.")
    };

    // The enqueue of a safe form on `send -> recv`: the length rule, both accesses, the raw
    // call (`pass` are its arguments after the element type, `stream` comes last).
    (@two_buffers $this:tt $name:ident $send:ident $recv:ident $stream:ident [$($rule:tt)+] [$($buffer:ident),+]
        $call:ident($($pass:tt)*)) => {{
        let count = collectives!(@rule count $this $name $send $recv $($rule)+);
        let what = [concat!(stringify!($name), " send"), concat!(stringify!($name), " recv")];
        $this.two_buffers(what, $send, $recv, $stream, |$($buffer),+| {
            // SAFETY: the buffer traits' contracts, and the length checked above; the guards
            // end the accesses after the launch.
            unsafe { $this.$call($($buffer,)+ count, T::DATA_TYPE, $($pass)* $stream.as_raw()) }
        })
    }};
    // The enqueue of a safe form on one buffer written: its pointer is every raw buffer (the
    // row's `send, recv` in place, or `recv`).
    (@one_buffer $this:tt $name:ident $buf:ident $stream:ident [$($buffer:ident),+] $call:ident($($pass:tt)*)) => {{
        let n = $buf.len();
        $this.one_buffer(concat!(stringify!($name), " buffer"), $buf, $stream, |p| {
            $(let $buffer = p;)+
            // SAFETY: the buffer trait's contract (send == recv is NCCL's in-place form).
            unsafe { $this.$call($($buffer,)+ n, T::DATA_TYPE, $($pass)* $stream.as_raw()) }
        })
    }};

    // The length rules of `send -> recv`: each its sentence and its check, which gives the
    // element count of the raw call.
    (@rule doc recv >= send) => { "`recv` must hold at least `send.len()` elements" };
    (@rule count $this:tt $name:ident $send:ident $recv:ident recv >= send) => {{
        at_least(concat!(stringify!($name), " recv"), $send.len(), $recv.len())?;
        $send.len()
    }};
    (@rule doc recv >= send * nranks) => { "`recv` must hold at least `send.len() * nranks` elements" };
    (@rule count $this:tt $name:ident $send:ident $recv:ident recv >= send * nranks) => {{
        const WHAT: &str = concat!(stringify!($name), " recv");
        at_least(WHAT, times_ranks(WHAT, $send.len(), $this.ranks()?)?, $recv.len())?;
        $send.len()
    }};
    (@rule doc send >= recv * nranks) => { "`send` must hold at least `recv.len() * nranks` elements" };
    (@rule count $this:tt $name:ident $send:ident $recv:ident send >= recv * nranks) => {{
        const WHAT: &str = concat!(stringify!($name), " send");
        at_least(WHAT, times_ranks(WHAT, $recv.len(), $this.ranks()?)?, $send.len())?;
        $recv.len()
    }};
    (@rule doc send == recv, a multiple of nranks) => {
        "both buffers must hold the same number of elements, a multiple of nranks"
    };
    (@rule count $this:tt $name:ident $send:ident $recv:ident send == recv, a multiple of nranks) => {{
        let nranks = $this.ranks()?;
        let what = concat!(stringify!($name), " buffers (equal, multiple of nranks)");
        equal_blocks(what, $send.len(), $recv.len(), nranks)?
    }};

    // The safe per-collective-config form, where the safe form has one.
    (@safe_config [$safe:ident $held:ident $shape:tt [] [$none:ident]] $($row:tt)*) => {};
    (@safe_config [$safe:ident $held:ident [send -> recv: $($rule:tt)+] [$safe_config:ident] []] $name:ident
        $title:literal [$config_raw:ident $field:ident $c_name:literal $since:literal] $buffers:tt
        ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@config_doc $c_name $since $safe $config_raw $title [send -> recv: $($rule)+])]
        #[allow(clippy::too_many_arguments)]
        pub fn $safe_config<T: NcclScalar, S: Stream>(
            &self,
            send: &impl DeviceBuffer<T>,
            recv: &mut impl DeviceBufferMut<T>,
            $($arg: $ty,)*
            config: &CollConfig,
            stream: &S,
        ) -> Result<(), Error> {
            grouped::refuse_safe_in_group()?;
            self.refuse_event(config)?;
            collectives!(@two_buffers self $name send recv stream [$($rule)+] $buffers $config_raw($($arg,)* config,))
                .map(drop)
        }
    };
    (@safe_config [$safe:ident $held:ident [in place] [$safe_config:ident] []] $name:ident $title:literal
        [$config_raw:ident $field:ident $c_name:literal $since:literal] $buffers:tt ($($arg:ident: $ty:ty),*)) => {
        #[doc = collectives!(@config_doc $c_name $since $safe $config_raw $title [in place])]
        pub fn $safe_config<T: NcclScalar, S: Stream>(
            &self,
            buf: &mut impl DeviceBufferMut<T>,
            $($arg: $ty,)*
            config: &CollConfig,
            stream: &S,
        ) -> Result<(), Error> {
            grouped::refuse_safe_in_group()?;
            self.refuse_event(config)?;
            collectives!(@one_buffer self $name buf stream $buffers $config_raw($($arg,)* config,)).map(drop)
        }
    };
    (@safe_config [$safe:ident $($entry:tt)*] $($row:tt)*) => {
        compile_error!(concat!("safe form `", stringify!($safe), "`: `safe config NAME` needs the row's `config raw:` \
            and buffers `send -> recv` or `in place`; else say `no safe config`"));
    };
    (@config_doc $c_name:literal $since:literal $safe:ident $config_raw:ident $title:literal $shape:tt) => {
        concat!(
            "`", $c_name, "` (", $since, "): [`", stringify!($safe), "`](Self::", stringify!($safe),
            ") with `config`, written for the loaded library. ", $title, " ", collectives!(@shape_doc $shape), ".\n\n",
            "Outside a group only. A `config` with a launch-completion event is refused \
            ([`Error::RawEventInSafeCall`](crate::nccl::Error::RawEventInSafeCall)): [`", stringify!($config_raw),
            "`](Self::", stringify!($config_raw), ") takes one."
        )
    };

    // The group-scope form: the held form, its guards kept until the group has launched the work.
    (@group [$safe:ident $held:ident [send -> recv: $($rule:tt)+] $($config:tt)*] ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("[`Communicator::", stringify!($safe), "`] in this group.")]
        #[allow(clippy::too_many_arguments)]
        pub fn $safe<T: NcclScalar, B: DeviceBuffer<T>, M: DeviceBufferMut<T>, S: Stream>(
            &self,
            comm: &'scope Communicator,
            send: &'scope B,
            recv: &'scope mut M,
            $($arg: $ty,)*
            stream: &'scope S,
        ) -> Result<(), Error> {
            comm.$held(send, recv, $($arg,)* stream).map(|g| self.hold(g))
        }
    };
    (@group [$safe:ident $held:ident [send] $($config:tt)*] ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("[`Communicator::", stringify!($safe), "`] in this group.")]
        pub fn $safe<T: NcclScalar, B: DeviceBuffer<T>, S: Stream>(
            &self,
            comm: &'scope Communicator,
            buf: &'scope B,
            $($arg: $ty,)*
            stream: &'scope S,
        ) -> Result<(), Error> {
            comm.$held(buf, $($arg,)* stream).map(|g| self.hold(g))
        }
    };
    // One buffer written: `[in place]` or `[recv]`.
    (@group [$safe:ident $held:ident $written:tt $($config:tt)*] ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("[`Communicator::", stringify!($safe), "`] in this group.")]
        pub fn $safe<T: NcclScalar, M: DeviceBufferMut<T>, S: Stream>(
            &self,
            comm: &'scope Communicator,
            buf: &'scope mut M,
            $($arg: $ty,)*
            stream: &'scope S,
        ) -> Result<(), Error> {
            comm.$held(buf, $($arg,)* stream).map(|g| self.hold(g))
        }
    };

    // The unit test's check of one row.
    (@test $functions:ident [$raw:ident $field:ident $c_name:literal [$($since:literal)?]]
        [$($config_raw:ident $config_field:ident $config_c_name:literal $config_since:literal)?]) => {
        assert_eq!($functions.$field.name(), $c_name);
        collectives!(@test_since $c_name $functions.$field.sym().since(), [$($since)?]);
        $(
            assert_eq!($functions.$config_field.name(), $config_c_name);
            assert_eq!(version($functions.$config_field.sym().since()), $config_since, "{}", $config_c_name);
        )?
    };
    (@test_since $c_name:literal $since:expr, [$row:literal]) => {
        assert_eq!(version($since), $row, "{}", $c_name);
    };
    // A row that gives no version names a function of NCCL's first releases.
    (@test_since $c_name:literal $since:expr, []) => {
        assert!($since <= Some((2, 3, 5)), "{} is newer than NCCL's first releases: give its since", $c_name);
    };
}

pub(super) use collectives;
