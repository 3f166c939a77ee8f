//! The crate's layers, read from its source: every module's imports, each resolved to the module
//! that defines what it names, must point down (docs/adr/0027-layers-kept-by-a-test.md). Fails when
//! - a top-level module imports one of a higher layer (`abi` from `engine`, `nccl` from `cuda`,
//!   ...) or a sibling of the same layer (`launch` and `plugin`);
//! - inside the NCCL facade, a folder imports a higher one (`types` < `library` < `comm` <
//!   `ops` < `host_api` < `cudarc`);
//! - any modules import each other in a cycle.
//!
//! What counts as an import: a path that starts at `crate`, `$crate`, `super`, `self` or a child
//! module, in a `use` or in code. A `pub use` / `pub(crate) use` is an alias, not a dependency:
//! a path through it is followed to the module that defines the item. Inline modules (`mod
//! tests { .. }`) count as their file. Calls of methods do not show in paths; the folders and
//! the paths they import are what this keeps honest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules, bottom first: a module may import from its own top-level module and
/// from those of a lower rank only.
const LAYERS: &[(&str, u32)] = &[
    ("ctype", 0),
    ("time", 0),
    ("trace", 0),
    ("abi", 1),
    ("engine", 2),
    ("foreign", 3),
    ("oracle", 3),
    ("cuda", 4),
    ("nccl", 5),
    ("launch", 6),
    ("plugin", 6),
    ("fuzzing", 7),
];

/// The NCCL facade's folders, bottom first.
const FACADE: &[&str] = &["types", "library", "comm", "ops", "host_api", "cudarc"];

/// A module: its path (`nccl::comm::shared`, "" for the crate root) and its source with the
/// comments and literals blanked.
struct Module {
    code: String,
    /// The inline modules (`mod name { .. }`): name, and the byte range of their body.
    inline: Vec<(String, usize, usize)>,
}

#[test]
fn imports_point_down_and_never_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(modules.len() > 100, "read {} modules from {}", modules.len(), src.display());
    let reexports = reexports(&modules);
    let edges = edges(&modules, &reexports);
    let mut failures = unplaced(&modules);
    for (from, targets) in &edges {
        for (to, path) in targets {
            if let Some(why) = wrong_direction(from, to) {
                failures.push(format!("{from} -> {to} ({path}): {why}"));
            }
        }
    }
    for cycle in cycles(&edges) {
        failures.push(format!("import cycle: {}", cycle.join(" -> ")));
    }
    assert!(failures.is_empty(), "{} layering violations:\n{}", failures.len(), failures.join("\n"));
}

/// The check itself catches what it is for: an upward import, a sibling import and a cycle,
/// added to a copy of the real graph.
#[test]
fn the_check_sees_an_upward_import_and_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = modules(&src);
    let mut patched = |name: &str, line: &str| {
        let m = modules.get_mut(name).unwrap_or_else(|| panic!("no module {name}"));
        m.code.push_str(line);
    };
    patched("abi", "\nuse crate::engine::plan::CallPlan;\n");
    patched("nccl::types::error", "\nfn f() -> crate::nccl::ops::group::Group<'static> { todo!() }\n");
    patched("plugin::common", "\nuse crate::launch::World;\n");
    // Two files of one folder importing each other: only the cycle check can see it.
    patched("nccl::comm::bounded", "\nfn g() -> crate::nccl::comm::grouped::Nothing { todo!() }\n");
    // A re-export of another layer's item is an import too.
    patched("ctype::limits", "\npub(crate) use crate::engine::plan::CallPlan;\n");
    let reexports = reexports(&modules);
    let edges = edges(&modules, &reexports);
    let wrong: Vec<_> = edges
        .iter()
        .flat_map(|(from, t)| t.iter().filter_map(move |(to, _)| wrong_direction(from, to).map(|_| (from, to))))
        .collect();
    let names: Vec<String> = wrong.iter().map(|(f, t)| format!("{f}->{t}")).collect();
    assert!(names.contains(&"abi->engine::plan".to_string()), "{names:?}");
    assert!(names.contains(&"nccl::types::error->nccl::ops::group".to_string()), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("plugin::common->launch")), "{names:?}");
    assert!(names.contains(&"ctype::limits->engine::plan".to_string()), "{names:?}");
    let cycles = cycles(&edges);
    assert!(
        cycles
            .iter()
            .any(|c| c.contains(&"nccl::comm::bounded".to_string()) && c.contains(&"nccl::comm::grouped".to_string())),
        "{cycles:?}"
    );
    assert!(unplaced(&modules).is_empty());
    modules.insert("gpu".into(), Module { code: String::new(), inline: Vec::new() });
    modules.insert("nccl::extra".into(), Module { code: String::new(), inline: Vec::new() });
    assert_eq!(unplaced(&modules).len(), 2, "{:?}", unplaced(&modules));
}

fn modules(src: &Path) -> BTreeMap<String, Module> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            let rel = path.strip_prefix(src).expect("below src");
            if rel.starts_with("bin") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut parts: Vec<String> =
                    rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
                if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
                    parts.pop();
                }
                let text = std::fs::read_to_string(&path).expect("readable source");
                let code = without_tests(&blank(&text));
                let inline = inline_modules(&code);
                out.insert(parts.join("::"), Module { code, inline });
            }
        }
    }
    // A file module declared `#[cfg(test)] mod name;` is test code as a whole.
    let test_files: Vec<String> = out
        .iter()
        .flat_map(|(name, m)| {
            let prefix = if name.is_empty() { String::new() } else { format!("{name}::") };
            test_only_files(&m.code).into_iter().map(move |child| format!("{prefix}{child}"))
        })
        .collect();
    for name in test_files {
        out.remove(&name);
    }
    out
}

/// The names of the child files a module declares under `#[cfg(test)]`.
fn test_only_files(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let rest = code[at + 12..].trim_start();
        let rest = rest.strip_prefix("pub(crate) ").or_else(|| rest.strip_prefix("pub ")).unwrap_or(rest);
        if let Some(decl) = rest.strip_prefix("mod ") {
            let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if decl[name.len()..].trim_start().starts_with(';') {
                out.push(name);
            }
        }
    }
    out
}

/// The inline modules of a module's code: name and body range, outermost first.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("mod ") {
        if ident_before(b, at) {
            continue;
        }
        let rest = &code[at + 4..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = at + 4 + name.len() + (rest.len() - name.len() - after.len());
        let mut depth = 0usize;
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((name.clone(), open, i));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The path of the module the code at `at` is in: the file's module and the inline modules
/// around it.
fn module_at(file: &str, m: &Module, at: usize) -> String {
    let mut path = file.to_string();
    for (name, from, to) in &m.inline {
        if (*from..*to).contains(&at) {
            path = if path.is_empty() { name.clone() } else { format!("{path}::{name}") };
        }
    }
    path
}

/// The code without the items marked `#[cfg(test)]` (unit tests, their helpers and imports):
/// tests may use the crate's test support (`oracle`) from any layer. Blanked, offsets kept.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let b = code.as_bytes();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        // The item runs to its `;` or to the `}` that closes its first `{`, whichever comes first.
        let (mut depth, mut end) = (0usize, b.len());
        for (i, &c) in b.iter().enumerate().skip(at + 12) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8(out).expect("only ASCII bytes are blanked")
}

/// The source with comments, string and character literals replaced by spaces (byte offsets
/// kept), so that only code is searched for paths.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                clear(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                clear(&mut out, i, j);
                i = j;
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) && !ident_before(b, i) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat(b'#').take(hashes)).collect();
                let start = i + 2 + hashes;
                let end = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| start + p + close.len());
                clear(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                clear(&mut out, i, j + 1);
                i = j + 1;
            }
            b'\'' => {
                // A character literal ('a', '\n', '\u{..}'), not a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    std::str::from_utf8(&b[i + 1..]).ok().and_then(|s| s.chars().next()).and_then(|c| {
                        let after = i + 1 + c.len_utf8();
                        (b.get(after) == Some(&b'\'')).then_some(after)
                    })
                };
                match end {
                    Some(e) => {
                        clear(&mut out, i, e + 1);
                        i = e + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only ASCII bytes become spaces, whole characters at a time")
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// The `use` items of a module: (is a re-export, the full paths of its tree, the span).
fn uses(code: &str) -> Vec<(bool, Vec<String>, (usize, usize))> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut at = 0;
    while let Some(p) = code[at..].find("use") {
        let start = at + p;
        at = start + 3;
        // The keyword (comments and strings are blanked), not part of a name.
        if ident_before(b, start) || !b.get(start + 3).is_some_and(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let Some(end) = code[start..].find(';').map(|e| start + e) else { break };
        let head = code[..start].trim_end();
        let public = head.ends_with("pub")
            || head.ends_with(')') && head.rfind('(').is_some_and(|o| head[..o].trim_end().ends_with("pub"));
        // The tree with white space only between words (`e as f`).
        let words: Vec<&str> = code[start + 3..end].split_whitespace().collect();
        let mut tree = words.join(" ");
        for sep in ["::", "{", "}", ","] {
            tree = tree.replace(&format!(" {sep}"), sep).replace(&format!("{sep} "), sep);
        }
        let mut paths = Vec::new();
        expand("", &tree, &mut paths);
        out.push((public, paths, (start, end)));
        at = end;
    }
    out
}

/// A use tree (`a::{b, c::{d, e as f}}`) as its full paths (`a::b`, `a::c::d`, `a::c::e`).
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let join = |p: &str, s: &str| if p.is_empty() { s.to_string() } else { format!("{p}::{s}") };
    if let Some(open) = tree.find('{') {
        let base = join(prefix, tree[..open].trim_end_matches("::"));
        let base = base.trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').expect("a closed use group")];
        let (mut depth, mut from) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(base, &inner[from..i], out);
                    from = i + 1;
                }
                _ => {}
            }
        }
        expand(base, &inner[from..], out);
    } else if !tree.is_empty() {
        let item = tree.split(" as ").next().unwrap_or(tree);
        match item.strip_suffix("self").filter(|p| p.is_empty() || p.ends_with("::")) {
            Some(rest) => out.push(join(prefix, rest.trim_end_matches("::")).trim_end_matches("::").to_string()),
            None => out.push(join(prefix, item)),
        }
    }
}

/// The module a path written in `module` starts from, and the rest of the path.
fn anchor(module: &str, path: &str, modules: &BTreeMap<String, Module>) -> Option<Vec<String>> {
    let mut parts: Vec<String> = path.split("::").map(str::to_string).collect();
    let mut base: Vec<String> =
        if module.is_empty() { Vec::new() } else { module.split("::").map(str::to_string).collect() };
    match parts[0].as_str() {
        "crate" | "$crate" => {
            parts.remove(0);
            base.clear();
        }
        "super" => {
            while parts.first().is_some_and(|p| p == "super") {
                parts.remove(0);
                base.pop()?;
            }
        }
        "self" => {
            parts.remove(0);
        }
        first => {
            // A child module, named without `self::`.
            let child = if module.is_empty() { first.to_string() } else { format!("{module}::{first}") };
            if !modules.contains_key(&child) {
                return None;
            }
        }
    }
    base.extend(parts);
    Some(base)
}

/// Every alias a module makes with `pub use`: `module::name` -> the full path it stands for.
fn reexports(modules: &BTreeMap<String, Module>) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (name, m) in modules {
        for (public, paths, _) in uses(&m.code) {
            if !public {
                continue;
            }
            for p in paths {
                let Some(full) = anchor(name, &p, modules) else { continue };
                let Some(last) = full.last() else { continue };
                if last == "*" {
                    continue;
                }
                let alias = if name.is_empty() { last.clone() } else { format!("{name}::{last}") };
                out.insert(alias, full);
            }
        }
    }
    out
}

/// True when `full` names something in `module` or below it.
fn inside(module: &str, full: &[String]) -> bool {
    let own: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
    full.len() > own.len() && own.iter().zip(full).all(|(a, b)| *a == b)
}

/// The module that defines what `full` names: the longest prefix that is a module, following
/// re-exports.
fn resolve(
    mut full: Vec<String>,
    modules: &BTreeMap<String, Module>,
    reexports: &BTreeMap<String, Vec<String>>,
) -> Option<String> {
    for _ in 0..16 {
        let mut hit = None;
        for n in (0..=full.len()).rev() {
            let prefix = full[..n].join("::");
            if modules.contains_key(&prefix) {
                hit = Some((n, prefix));
                break;
            }
        }
        let (n, module) = hit?;
        match full.get(n) {
            Some(item) => {
                let alias = if module.is_empty() { item.clone() } else { format!("{module}::{item}") };
                match reexports.get(&alias) {
                    Some(target) if *target != full[..=n] => {
                        let mut next = target.clone();
                        next.extend(full[n + 1..].iter().cloned());
                        full = next;
                    }
                    _ => return Some(module),
                }
            }
            None => return Some(module),
        }
    }
    None
}

/// module -> {(imported module, the path as written)}.
fn edges(
    modules: &BTreeMap<String, Module>,
    reexports: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for (name, m) in modules {
        let entry = out.entry(name.clone()).or_default();
        let mut spans = Vec::new();
        let mut add = |path: String, at: usize| {
            let here = module_at(name, m, at);
            if let Some(full) = anchor(&here, &path, modules) {
                if let Some(target) = resolve(full, modules, reexports) {
                    if target != *name && !target.is_empty() {
                        entry.insert((target, path));
                    }
                }
            }
        };
        for (public, paths, span) in uses(&m.code) {
            spans.push(span);
            for p in paths {
                // A module re-exporting its own submodules' items gives them a path (the facade's
                // and the crate's roots do); re-exporting anything else is an import like any.
                if public && anchor(name, &p, modules).is_some_and(|full| inside(name, &full)) {
                    continue;
                }
                add(p, span.0);
            }
        }
        // Paths in code, outside `use` items.
        let mut i = 0;
        while i < m.code.len() {
            match path_at(&m.code, i).filter(|_| !spans.iter().any(|&(a, z)| (a..z).contains(&i))) {
                Some(path) => {
                    add(path.trim_end_matches(':').to_string(), i);
                    i += path.len();
                }
                None => i += 1,
            }
        }
    }
    out
}

/// The path that starts at byte `i` of `code`, if one starts there (`crate::`, `$crate::`,
/// `super::`, `self::`, not inside a longer name).
fn path_at(code: &str, i: usize) -> Option<&str> {
    let b = code.as_bytes();
    if ident_before(b, i) || (i > 0 && b[i - 1] == b'$') {
        return None;
    }
    let rest = &code[i..];
    ["$crate::", "crate::", "super::", "self::"].iter().find(|s| rest.starts_with(**s))?;
    let len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '$')).unwrap_or(rest.len());
    Some(&rest[..len])
}

/// Every top-level module has a layer, and every module of the facade a folder: a new one is
/// placed in `LAYERS` or `FACADE` deliberately, never left unchecked.
fn unplaced(modules: &BTreeMap<String, Module>) -> Vec<String> {
    let mut out = Vec::new();
    for name in modules.keys().filter(|n| !n.is_empty()) {
        let mut parts = name.split("::");
        let top = parts.next().unwrap_or_default();
        if !LAYERS.iter().any(|(n, _)| *n == top) {
            out.push(format!("{name}: top-level module {top} has no place in LAYERS"));
        } else if top == "nccl" {
            if let Some(folder) = parts.next().filter(|f| !FACADE.contains(f)) {
                out.push(format!("{name}: the facade's {folder} has no place in FACADE"));
            }
        }
    }
    out
}

fn rank(module: &str) -> Option<u32> {
    let top = module.split("::").next()?;
    LAYERS.iter().find(|(n, _)| *n == top).map(|&(_, r)| r)
}

fn wrong_direction(from: &str, to: &str) -> Option<String> {
    let (top_from, top_to) = (from.split("::").next()?, to.split("::").next()?);
    if top_from != top_to {
        let (rf, rt) = (rank(from)?, rank(to)?);
        if rt > rf {
            return Some(format!("{top_from} is below {top_to}"));
        }
        if rt == rf {
            return Some(format!("{top_from} and {top_to} are one layer: neither imports the other"));
        }
        return None;
    }
    if top_from == "nccl" {
        let folder = |m: &str| m.split("::").nth(1).and_then(|f| FACADE.iter().position(|x| *x == f));
        if let (Some(a), Some(b)) = (folder(from), folder(to)) {
            if b > a {
                return Some(format!("the facade's {} is below its {}", FACADE[a], FACADE[b]));
            }
        }
    }
    None
}

/// Every cycle among the modules (one per strongly connected component, shown as a path).
fn cycles(edges: &BTreeMap<String, BTreeSet<(String, String)>>) -> Vec<Vec<String>> {
    let graph: BTreeMap<&str, Vec<&str>> =
        edges.iter().map(|(k, v)| (k.as_str(), v.iter().map(|(t, _)| t.as_str()).collect())).collect();
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for &start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        // A path back to `start`, by breadth-first search.
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut found = None;
        while let Some(n) = queue.pop_front() {
            for &t in graph.get(n).into_iter().flatten() {
                if t == start {
                    found = Some(n);
                    break;
                }
                if !prev.contains_key(t) && t != start {
                    prev.insert(t, n);
                    queue.push_back(t);
                }
            }
            if found.is_some() {
                break;
            }
        }
        if let Some(mut n) = found {
            let mut cycle = vec![start.to_string()];
            let mut back = vec![n];
            while n != start {
                match prev.get(n) {
                    Some(&p) if p != start => {
                        back.push(p);
                        n = p;
                    }
                    _ => break,
                }
            }
            cycle.extend(back.iter().rev().map(|s| s.to_string()));
            cycle.push(start.to_string());
            for m in &cycle {
                done.insert(m.clone());
            }
            out.push(cycle);
        }
    }
    out
}

#[test]
fn use_trees_expand() {
    let mut out = Vec::new();
    expand("", "crate::a::{b,c::{d,e as f},self}", &mut out);
    assert_eq!(out, ["crate::a::b", "crate::a::c::d", "crate::a::c::e", "crate::a"]);
    let code = blank("// crate::x::y\nlet s = \"crate::z\"; let c = '\"'; use crate::q::r;");
    assert!(!code.contains("crate::x") && !code.contains("crate::z") && code.contains("crate::q::r"));
}
