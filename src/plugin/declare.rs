//! How a plugin family's C types are declared: once each, in a `plugin_struct!` or
//! `plugin_table!` line, from which everything else is generated — the `#[repr(C)]` type a
//! Rust plugin fills and a host reads, its layout record ([`CLayout`]) that the layout test
//! compares with the C compiler's view of a transcription of NCCL's header, and for a table
//! the names of its mandatory entries and a binding of every entry to the call core.

/// A C type's layout as Rust sees it: what the C compiler must agree with
/// (tests/plugin_layouts.rs builds `_Static_assert`s from these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CLayout {
    /// The C type: a `typedef` name of NCCL's headers, or a `__typeof__` expression for an
    /// anonymous member type.
    pub c_name: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
    /// Each field's C member designator and `offsetof`.
    pub fields: &'static [(&'static str, usize)],
}

/// Declares `#[repr(C)]` structs (or unions) of a plugin family, each with its C name, and a
/// `LAYOUT` constant per type. A field whose C member has another name (a Rust field that
/// stands for an anonymous C union) says it with `as "designator"`.
///
/// ```ignore
/// plugin_struct! {
///     /// docs
///     pub struct NetPropertiesV8 = "ncclNetProperties_v8_t" {
///         pub name: *mut c_char,
///         pub guid: u64,
///     }
/// }
/// ```
macro_rules! plugin_struct {
    ($(
        $(#[$meta:meta])*
        $vis:vis $kind:ident $name:ident = $c_name:literal {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident $(as $c_field:literal)? : $ty:ty
            ),* $(,)?
        }
    )*) => {$(
        $crate::plugin::declare::plugin_struct!(@item $kind, [$(#[$meta])*], $vis, $name {
            $( $(#[$fmeta])* $fvis $field : $ty, )*
        });
        impl $name {
            /// The layout the C compiler must agree with.
            pub const LAYOUT: $crate::plugin::CLayout = $crate::plugin::CLayout {
                c_name: $c_name,
                size: ::core::mem::size_of::<$name>(),
                align: ::core::mem::align_of::<$name>(),
                fields: &[$(
                    (
                        $crate::plugin::declare::plugin_struct!(@c_field $field $(, $c_field)?),
                        ::core::mem::offset_of!($name, $field),
                    ),
                )*],
            };
        }
    )*};
    (@item struct, [$(#[$meta:meta])*], $vis:vis, $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        #[allow(non_snake_case)]
        $vis struct $name { $($body)* }
    };
    (@item union, [$(#[$meta:meta])*], $vis:vis, $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        #[allow(non_snake_case)]
        $vis union $name { $($body)* }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(concat!(stringify!($name), " { .. }"))
            }
        }
    };
    (@c_field $field:ident) => { stringify!($field) };
    (@c_field $field:ident, $c_field:literal) => { $c_field };
}

/// Declares a plugin table: a `#[repr(C)]` struct of NCCL's shape — the plugin's `name`, then
/// one nullable C function pointer per entry, each `required` (NCCL calls it without checking)
/// or `optional` (NCCL checks it for NULL first) — with its C name, the symbol a plugin exports
/// it under, its `LAYOUT`, and:
///
/// - `ENTRIES`, every entry with whether it is required, and `missing()`, the required ones
///   that are NULL;
/// - a `…Calls` struct of every entry bound to the call core ([`TypedFn`](crate::TypedFn)),
///   which is how a host calls a loaded plugin: through the trampolines, like every other C
///   call of the crate.
macro_rules! plugin_table {
    ($(
        $(#[$meta:meta])*
        $vis:vis struct $name:ident = $c_name:literal, symbol $symbol:literal, calls $calls:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $need:ident fn ( $( $arg:ident : $aty:ty ),* $(,)? ) -> $ret:ty
            ),* $(,)?
        }
    )*) => {$(
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        #[allow(non_snake_case)]
        $vis struct $name {
            /// The plugin's name (NCCL logs it), a C string that lives as long as the plugin.
            pub name: *const ::core::ffi::c_char,
            $(
                $(#[$fmeta])*
                pub $field: Option<unsafe extern "C" fn( $( $arg : $aty ),* ) -> $ret>,
            )*
        }

        // SAFETY: the table is immutable, shared C data: NCCL reads it from every thread, and
        // the strings and functions it points to are the plugin's, alive while it is loaded.
        unsafe impl Sync for $name {}
        // SAFETY: as above.
        unsafe impl Send for $name {}

        #[allow(clippy::too_many_arguments)]
        impl $name {
            /// The C type.
            pub const C_NAME: &'static str = $c_name;
            /// The symbol a plugin exports this table under.
            pub const SYMBOL: &'static str = $symbol;
            /// The layout the C compiler must agree with.
            pub const LAYOUT: $crate::plugin::CLayout = $crate::plugin::CLayout {
                c_name: $c_name,
                size: ::core::mem::size_of::<$name>(),
                align: ::core::mem::align_of::<$name>(),
                fields: &[
                    ("name", ::core::mem::offset_of!($name, name)),
                    $( (stringify!($field), ::core::mem::offset_of!($name, $field)), )*
                ],
            };
            /// Every entry in table order, with whether NCCL calls it without checking for NULL.
            pub const ENTRIES: &'static [(&'static str, bool)] = &[
                $( (stringify!($field), $crate::plugin::declare::plugin_table!(@is_required $need)), )*
            ];

            /// The required entries that are NULL in this table.
            pub fn missing(&self) -> Vec<&'static str> {
                let mut missing = Vec::new();
                $(
                    if $crate::plugin::declare::plugin_table!(@is_required $need) && self.$field.is_none() {
                        missing.push(stringify!($field));
                    }
                )*
                missing
            }
        }

        #[doc = concat!("The entries of a `", $c_name, "` bound to the call core: `None` where the table's is NULL.")]
        #[allow(non_snake_case, dead_code)]
        $vis struct $calls {
            $(
                $(#[$fmeta])*
                pub $field: Option<$crate::TypedFn<( $( $aty, )* ), $ret>>,
            )*
        }

        impl $calls {
            /// Binds every non-NULL entry of `table`.
            ///
            /// # Safety
            ///
            /// Each non-NULL entry is a function of the declared prototype (the plugin's
            /// contract with NCCL), loaded for as long as the result is used.
            pub unsafe fn bind(table: &$name) -> Result<Self, $crate::Error> {
                Ok($calls {
                    $(
                        $field: match table.$field {
                            // SAFETY: the prototype is the entry's declared type (caller).
                            Some(f) => Some(unsafe {
                                $crate::CallPlan::new(&$crate::symbols::signature::<( $( $aty, )* ), $ret>()?)?
                                    .bind::<( $( $aty, )* ), $ret>(f as *const ::core::ffi::c_void)?
                            }),
                            None => None,
                        },
                    )*
                })
            }
        }
    )*};
    (@is_required required) => { true };
    (@is_required optional) => { false };
}

/// Calls an entry of a `…Calls` binding with `args`; a NULL entry answers `else`'s value, by
/// default `ncclInternalError` (a host refuses tables whose required entries are NULL when it
/// loads them, so this is for optional ones).
macro_rules! call_entry {
    ($calls:ident . $entry:ident ( $($arg:expr),* $(,)? ) else $null:expr) => {
        match &$calls.$entry {
            // SAFETY: the entry's prototype (its binding); the arguments are what its contract
            // asks: the hosts pass live out-pointers and buffers, and the comms, contexts and
            // requests the plugin handed out.
            Some(f) => unsafe { f.call(($($arg,)*)) },
            None => $null,
        }
    };
    ($calls:ident . $entry:ident ( $($arg:expr),* $(,)? )) => {
        $crate::plugin::declare::call_entry!($calls.$entry($($arg),*) else $crate::nccl::NcclResult::INTERNAL_ERROR)
    };
}

/// The `…Calls` binding of a loaded plugin's table of type `$table` (`?` on failure).
macro_rules! bind_table {
    ($plugin:expr, $table:ty, $calls:ty) => {{
        // SAFETY: the caller matched the plugin's version to its table type.
        let table: &$table = unsafe { $plugin.table::<$table>() };
        // SAFETY: a checked table's entries have their declared prototypes (the plugin's
        // contract with NCCL); the library is never unloaded.
        unsafe { <$calls>::bind(table) }.map_err($crate::plugin::PluginError::Core)?
    }};
}

pub(crate) use {bind_table, call_entry, plugin_struct, plugin_table};
