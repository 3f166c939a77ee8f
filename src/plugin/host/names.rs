//! Which files NCCL tries for a plugin family, and in which order: a pure function of the
//! family and its environment variable, modelled on NCCL v2.30.7-1 (the lines cited are of
//! that tag) so that a host finds exactly the plugin NCCL would.
//!
//! - src/plugin/plugin_open.cc:82-131 (`openPluginLib`): a non-empty name is tried as given
//!   (the system loader searches a bare name; a name with `/` is a path); no name means
//!   `<prefix>.so`. Then, when the name has no `/` and is not both `lib…` and `….so`,
//!   `<prefix>-<name>.so`. Names are cut to 254 bytes (`snprintf` into `MAX_STR_LEN` 255).
//! - plugin_open.cc:32-34 (`tryOpenLib`): a name that is, ignoring case, a prefix of
//!   `STATIC_PLUGIN` (so also `s` or `static`) opens the program itself (`dlopen(NULL)`), for
//!   plugins linked into it; an empty name opens nothing.
//! - src/plugin/net.cc:255-293 and src/plugin/gin.cc:196-236: `NCCL_NET_PLUGIN` and
//!   `NCCL_GIN_PLUGIN` are comma-separated lists (`strtok_r`: empty items vanish), each entry
//!   a name as above, at most 14 (net: 16 less its 2 built-in transports) and 13 (GIN: 16
//!   less 3 reserved) entries, an entry of 255 bytes or more ignored; `none` (any case)
//!   disables external plugins of the family; unset means `libnccl-net.so` /
//!   `libnccl-gin.so`.
//! - src/plugin/tuner.cc:50-62, profiler.cc:58-65, env.cc:42-49: `NCCL_TUNER_PLUGIN`,
//!   `NCCL_PROFILER_PLUGIN` and `NCCL_ENV_PLUGIN` name one plugin; `none` (any case)
//!   disables; unset means `<prefix>.so`. When the tuner's or profiler's own file is not found,
//!   NCCL looks for its symbol in the network plugin's library (`ncclGetNetPluginLib`);
//!   GIN also tries the network plugin's library after its list (gin.cc:239-243).

/// One plugin family: its file prefix, variable and symbols (plugin_open.cc:18-19).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Network transports: `libnccl-net*.so`, `NCCL_NET_PLUGIN`, `ncclNetPlugin_vN`.
    Net,
    /// GPU-initiated networking: `libnccl-gin*.so`, `NCCL_GIN_PLUGIN`, `ncclGinPlugin_vN`.
    Gin,
    /// Collective tuning: `libnccl-tuner*.so`, `NCCL_TUNER_PLUGIN`, `ncclTunerPlugin_vN`.
    Tuner,
    /// Profiling: `libnccl-profiler*.so`, `NCCL_PROFILER_PLUGIN`, `ncclProfiler_vN`.
    Profiler,
    /// Environment: `libnccl-env*.so`, `NCCL_ENV_PLUGIN`, `ncclEnvPlugin_vN`.
    Env,
}

/// The cut NCCL applies to a name it copies (`MAX_STR_LEN` 255 with its NUL).
const MAX_NAME: usize = 254;

impl Family {
    /// Every family, in the order `doctor` reports them.
    pub const ALL: [Family; 5] = [Family::Net, Family::Gin, Family::Tuner, Family::Profiler, Family::Env];

    /// The file prefix (plugin_open.cc:18-19).
    pub fn prefix(self) -> &'static str {
        match self {
            Family::Net => "libnccl-net",
            Family::Gin => "libnccl-gin",
            Family::Tuner => "libnccl-tuner",
            Family::Profiler => "libnccl-profiler",
            Family::Env => "libnccl-env",
        }
    }

    /// The environment variable that names the plugin.
    pub fn variable(self) -> &'static str {
        match self {
            Family::Net => "NCCL_NET_PLUGIN",
            Family::Gin => "NCCL_GIN_PLUGIN",
            Family::Tuner => "NCCL_TUNER_PLUGIN",
            Family::Profiler => "NCCL_PROFILER_PLUGIN",
            Family::Env => "NCCL_ENV_PLUGIN",
        }
    }

    /// NCCL's name for the family in its logs (plugin_open.cc:17).
    pub fn label(self) -> &'static str {
        match self {
            Family::Net => "NET",
            Family::Gin => "GIN",
            Family::Tuner => "TUNER",
            Family::Profiler => "PROFILER",
            Family::Env => "ENV",
        }
    }

    /// The most list entries NCCL keeps, for the families whose variable is a list.
    fn list_cap(self) -> Option<usize> {
        match self {
            Family::Net => Some(16 - 2),
            Family::Gin => Some(16 - 3),
            _ => None,
        }
    }

    /// True where NCCL looks in the network plugin's library when the family's own file is
    /// not found (tuner.cc:62-66, profiler.cc:62-66), or after its own list (gin.cc:239-243).
    pub fn falls_back_to_net(self) -> bool {
        matches!(self, Family::Gin | Family::Tuner | Family::Profiler)
    }
}

/// What NCCL hands its loader for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// `dlopen` of this name: a bare name the system loader searches for, or a path.
    File(String),
    /// `dlopen(NULL)`: the program itself (`STATIC_PLUGIN`).
    Program,
}

/// One entry of the family's variable (or its default) with the names NCCL tries for it, in
/// order; the first that loads is the entry's library.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// The entry as the variable gives it (`None`: the variable is unset, the default).
    pub given: Option<String>,
    /// The names tried, in order.
    pub attempts: Vec<Attempt>,
}

/// Everything NCCL would try for a family, and what it would skip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Search {
    /// The entries, in order (empty when disabled).
    pub entries: Vec<Entry>,
    /// True when the variable says `none`.
    pub disabled: bool,
    /// Entries NCCL drops, each with why.
    pub ignored: Vec<(String, String)>,
}

/// The names NCCL tries for one non-empty name, or the default when `name` is `None`
/// (plugin_open.cc:82-131).
pub fn attempts(family: Family, name: Option<&str>) -> Vec<Attempt> {
    let open = |n: String| -> Option<Attempt> {
        let n = cut(&n);
        if n.is_empty() {
            None
        } else if is_static(n) {
            Some(Attempt::Program)
        } else {
            Some(Attempt::File(n.to_string()))
        }
    };
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return open(format!("{}.so", family.prefix())).into_iter().collect();
    };
    let mut tried: Vec<Attempt> = open(name.to_string()).into_iter().collect();
    let full_name = name.starts_with("lib") && name.ends_with(".so");
    if !name.contains('/') && !full_name {
        tried.extend(open(format!("{}-{name}.so", family.prefix())));
    }
    tried
}

/// Everything NCCL tries for `family` when its variable holds `value` (`None`: unset).
pub fn search(family: Family, value: Option<&str>) -> Search {
    let Some(value) = value else {
        return Search { entries: vec![Entry { given: None, attempts: attempts(family, None) }], ..Search::default() };
    };
    if value.eq_ignore_ascii_case("none") {
        return Search { disabled: true, ..Search::default() };
    }
    let Some(cap) = family.list_cap() else {
        // One name; an empty one opens the default (`openPluginLib` with an empty name).
        return Search {
            entries: vec![Entry { given: Some(value.to_string()), attempts: attempts(family, Some(value)) }],
            ..Search::default()
        };
    };
    let mut found = Search::default();
    for item in value.split(',').filter(|i| !i.is_empty()) {
        if found.entries.len() >= cap {
            found.ignored.push((item.to_string(), format!("{} lists at most {cap} plugins", family.variable())));
            continue;
        }
        if item.len() + 1 > MAX_NAME + 1 {
            found.ignored.push((item.to_string(), format!("longer than {} characters", MAX_NAME + 1)));
            continue;
        }
        found.entries.push(Entry { given: Some(item.to_string()), attempts: attempts(family, Some(item)) });
    }
    found
}

/// `name` cut to what NCCL's `snprintf` keeps, at a character boundary.
fn cut(name: &str) -> &str {
    if name.len() <= MAX_NAME {
        return name;
    }
    let mut end = MAX_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// `strncasecmp(name, "STATIC_PLUGIN", strlen(name)) == 0` (plugin_open.cc:32).
fn is_static(name: &str) -> bool {
    let target = b"STATIC_PLUGIN";
    name.len() <= target.len() && name.as_bytes().eq_ignore_ascii_case(&target[..name.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<Attempt> {
        names.iter().map(|n| Attempt::File(n.to_string())).collect()
    }

    /// One case per rule of plugin_open.cc:82-131, net.cc:255-293, gin.cc:196-236 and the
    /// single-name families.
    #[test]
    fn each_rule_of_nccls_loader() {
        /// A family, its variable, the names tried per entry, disabled, entries ignored.
        type Case<'a> = (Family, Option<&'a str>, Vec<Vec<Attempt>>, bool, usize);
        let long = "x".repeat(300);
        let cases: &[Case] = &[
            // Unset: the default file only.
            (Family::Net, None, vec![files(&["libnccl-net.so"])], false, 0),
            (Family::Tuner, None, vec![files(&["libnccl-tuner.so"])], false, 0),
            (Family::Env, None, vec![files(&["libnccl-env.so"])], false, 0),
            // `none`, any case: disabled.
            (Family::Net, Some("none"), vec![], true, 0),
            (Family::Profiler, Some("NoNe"), vec![], true, 0),
            // A bare name: as given, then <prefix>-<name>.so.
            (Family::Net, Some("ofi"), vec![files(&["ofi", "libnccl-net-ofi.so"])], false, 0),
            (Family::Tuner, Some("basic"), vec![files(&["basic", "libnccl-tuner-basic.so"])], false, 0),
            // A list: each entry in order (net and GIN only).
            (
                Family::Net,
                Some("ofi,ib"),
                vec![files(&["ofi", "libnccl-net-ofi.so"]), files(&["ib", "libnccl-net-ib.so"])],
                false,
                0,
            ),
            (
                Family::Gin,
                Some("a,,b"),
                vec![files(&["a", "libnccl-gin-a.so"]), files(&["b", "libnccl-gin-b.so"])],
                false,
                0,
            ),
            // A comma is part of the name for the single-name families.
            (Family::Tuner, Some("a,b"), vec![files(&["a,b", "libnccl-tuner-a,b.so"])], false, 0),
            // Already a library name: as given only.
            (Family::Net, Some("libnccl-net-x.so"), vec![files(&["libnccl-net-x.so"])], false, 0),
            // `lib…` without `.so`, or `….so` without `lib`: both names.
            (Family::Net, Some("libx"), vec![files(&["libx", "libnccl-net-libx.so"])], false, 0),
            (Family::Net, Some("x.so"), vec![files(&["x.so", "libnccl-net-x.so.so"])], false, 0),
            // A path: as given only.
            (Family::Profiler, Some("./p.so"), vec![files(&["./p.so"])], false, 0),
            (Family::Net, Some("/opt/x"), vec![files(&["/opt/x"])], false, 0),
            // STATIC_PLUGIN and its prefixes, any case: the program itself first.
            (
                Family::Net,
                Some("STATIC_PLUGIN"),
                vec![vec![Attempt::Program, Attempt::File("libnccl-net-STATIC_PLUGIN.so".into())]],
                false,
                0,
            ),
            (
                Family::Tuner,
                Some("st"),
                vec![vec![Attempt::Program, Attempt::File("libnccl-tuner-st.so".into())]],
                false,
                0,
            ),
            // An empty single name: the default.
            (Family::Env, Some(""), vec![files(&["libnccl-env.so"])], false, 0),
            // An empty list: nothing.
            (Family::Net, Some(""), vec![], false, 0),
            // An entry of 255 bytes or more is ignored.
            (Family::Net, Some(&long), vec![], false, 1),
        ];
        for (family, value, expected, disabled, ignored) in cases {
            let s = search(*family, *value);
            let got: Vec<Vec<Attempt>> = s.entries.iter().map(|e| e.attempts.clone()).collect();
            assert_eq!(&got, expected, "{family:?} {value:?}");
            assert_eq!(s.disabled, *disabled, "{family:?} {value:?}");
            assert_eq!(s.ignored.len(), *ignored, "{family:?} {value:?}");
        }
    }

    #[test]
    fn lists_are_capped_as_nccl_caps_them() {
        let many: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
        let net = search(Family::Net, Some(&many.join(",")));
        assert_eq!((net.entries.len(), net.ignored.len()), (14, 6));
        let gin = search(Family::Gin, Some(&many.join(",")));
        assert_eq!((gin.entries.len(), gin.ignored.len()), (13, 7));
    }

    #[test]
    fn a_single_long_name_is_cut_as_snprintf_cuts_it() {
        let long = "y".repeat(300);
        let s = search(Family::Tuner, Some(&long));
        assert_eq!(s.entries[0].attempts, files(&[&"y".repeat(254), &format!("libnccl-tuner-{}", "y".repeat(240))]));
    }
}
