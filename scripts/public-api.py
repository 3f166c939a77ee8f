#!/usr/bin/env python3
"""The crate's public API, one line per item, from rustdoc's JSON output.

    cargo +NIGHTLY rustdoc --lib -- -Z unstable-options --output-format json
    scripts/public-api.py target/doc/nccl_trampoline.json

Every item a user can name from the crate root is listed under every path that names it
(re-exports followed, globs expanded): modules, structs, unions, enums and their variants,
public fields, traits and their items, functions, inherent methods and associated items,
constants, statics, type aliases, exported macros, re-exports of other crates' items, and the
trait impls a type states (`impl Trait for Type`; the compiler's auto-trait impls and blanket
impls are left out). Items marked `#[doc(hidden)]`, and everything below them, are not part of
the API and are not listed. Functions and methods carry their rendered signature; constants
their type, not their value. The output is sorted, so a diff shows what changed.

scripts/public-api.sh runs this for the committed listings in docs/.
"""

import json
import sys

ROOT = "nccl_trampoline"


class Api:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc["paths"]
        # id -> the shortest public path that names it (for rendering types).
        self.public_path = {}
        self.lines = set()

    # ---------------------------------------------------------------- the walk

    def item(self, id_):
        return self.index.get(str(id_))

    @staticmethod
    def kind(item):
        inner = item["inner"]
        return next(iter(inner)) if isinstance(inner, dict) else inner

    @staticmethod
    def hidden(item):
        for attr in item.get("attrs") or []:
            text = attr if isinstance(attr, str) else json.dumps(attr)
            if "doc(hidden)" in text.replace(" ", ""):
                return True
        return False

    def walk(self, emit):
        """Calls emit(path, item) for every public item, under every path that names it."""
        seen = set()

        def module(mod_id, path):
            key = (mod_id, "::".join(path))
            if key in seen:
                return
            seen.add(key)
            for child_id in self.item(mod_id)["inner"]["module"]["items"]:
                child = self.item(child_id)
                if child is None or self.hidden(child):
                    continue
                if self.kind(child) == "use":
                    use = child["inner"]["use"]
                    target = self.item(use["id"]) if use["id"] is not None else None
                    if use["is_glob"]:
                        if target is not None and self.kind(target) == "module":
                            module(target["id"], path)
                        elif target is not None and self.kind(target) == "enum":
                            for v in target["inner"]["enum"]["variants"]:
                                variant = self.item(v)
                                emit(path + [variant["name"]], variant)
                        continue
                    if target is None or self.hidden(target):
                        if target is None:
                            emit(path + [use["name"]], child)
                        continue
                    node(target, path + [use["name"]])
                else:
                    node(child, path + [child["name"]])

        def node(item, path):
            emit(path, item)
            if self.kind(item) == "module":
                module(item["id"], path)

        root = self.item(self.doc["root"])
        emit([ROOT], root)
        module(root["id"], [ROOT])

    def collect_paths(self):
        def note(path, item):
            joined = "::".join(path)
            old = self.public_path.get(item["id"])
            if old is None or (len(path), joined) < (old.count("::") + 1, old):
                self.public_path[item["id"]] = joined

        self.walk(note)

    # ------------------------------------------------------------ rendering

    def path_of(self, id_, written):
        if id_ in self.public_path:
            return self.public_path[id_]
        summary = self.paths.get(str(id_))
        if summary is not None:
            # core's C types are defined in core::ffi::primitives and named as core::ffi::*.
            return "::".join(summary["path"]).replace("core::ffi::primitives::", "core::ffi::")
        return written

    def resolved(self, p):
        text = self.path_of(p["id"], p["path"])
        return text + self.generic_args(p.get("args"))

    def generic_args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            ab = args["angle_bracketed"]
            parts = [self.generic_arg(a) for a in ab["args"]]
            parts += [self.constraint(c) for c in ab["constraints"]]
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = "(" + ", ".join(self.ty(t) for t in p["inputs"]) + ")"
            if p.get("output") is not None:
                out += " -> " + self.ty(p["output"])
            return out
        return ""

    def generic_arg(self, a):
        if a == "infer":
            return "_"
        if "lifetime" in a:
            return a["lifetime"]
        if "type" in a:
            return self.ty(a["type"])
        if "const" in a:
            return a["const"]["expr"]
        return "?"

    def constraint(self, c):
        name = c["name"] + self.generic_args(c.get("args"))
        binding = c["binding"]
        if "equality" in binding:
            term = binding["equality"]
            return name + " = " + (self.ty(term["type"]) if "type" in term else term["constant"]["expr"])
        return name + ": " + self.bounds(binding["constraint"])

    def bounds(self, bounds):
        return " + ".join(self.bound(b) for b in bounds)

    def bound(self, b):
        if "trait_bound" in b:
            tb = b["trait_bound"]
            modifier = {"none": "", "maybe": "?", "maybe_const": "~const "}.get(tb["modifier"], "")
            hrtb = self.for_params(tb.get("generic_params") or [])
            return hrtb + modifier + self.resolved(tb["trait"])
        if "outlives" in b:
            return b["outlives"]
        if "use" in b:
            return "use<" + ", ".join(str(x) if isinstance(x, str) else next(iter(x.values())) for x in b["use"]) + ">"
        return "?"

    def for_params(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(p["name"] for p in params) + "> "

    def ty(self, t):
        if t is None:
            return "()"
        if "resolved_path" in t:
            return self.resolved(t["resolved_path"])
        if "generic" in t:
            return t["generic"]
        if "primitive" in t:
            return t["primitive"]
        if "tuple" in t:
            items = [self.ty(x) for x in t["tuple"]]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if "slice" in t:
            return "[" + self.ty(t["slice"]) + "]"
        if "array" in t:
            return "[" + self.ty(t["array"]["type"]) + "; " + t["array"]["len"] + "]"
        if "raw_pointer" in t:
            rp = t["raw_pointer"]
            return ("*mut " if rp["is_mutable"] else "*const ") + self.ty(rp["type"])
        if "borrowed_ref" in t:
            br = t["borrowed_ref"]
            out = "&"
            if br.get("lifetime"):
                out += br["lifetime"] + " "
            if br["is_mutable"]:
                out += "mut "
            return out + self.ty(br["type"])
        if "dyn_trait" in t:
            dt = t["dyn_trait"]
            parts = [self.for_params(x.get("generic_params") or []) + self.resolved(x["trait"]) for x in dt["traits"]]
            if dt.get("lifetime"):
                parts.append(dt["lifetime"])
            return "dyn " + " + ".join(parts)
        if "impl_trait" in t:
            return "impl " + self.bounds(t["impl_trait"])
        if "function_pointer" in t:
            fp = t["function_pointer"]
            head = self.for_params(fp.get("generic_params") or []) + self.header(fp["header"])
            return head + "fn" + self.sig(fp["sig"], names=False)
        if "qualified_path" in t:
            qp = t["qualified_path"]
            self_ty = self.ty(qp["self_type"])
            if qp.get("trait") is not None:
                base = "<" + self_ty + " as " + self.resolved(qp["trait"]) + ">"
            else:
                base = self_ty
            return base + "::" + qp["name"] + self.generic_args(qp.get("args"))
        if "infer" in t or t == "infer":
            return "_"
        if "pat" in t:
            return self.ty(t["pat"]["type"])
        return "?"

    def header(self, h):
        out = ""
        if h.get("is_const"):
            out += "const "
        if h.get("is_async"):
            out += "async "
        if h.get("is_unsafe"):
            out += "unsafe "
        abi = h.get("abi")
        if isinstance(abi, dict):
            name, data = next(iter(abi.items()))
            unwind = isinstance(data, dict) and data.get("unwind")
            out += 'extern "' + {"C": "C", "System": "system"}.get(name, name) + ("-unwind" if unwind else "") + '" '
        elif abi not in (None, "Rust"):
            out += 'extern "' + str(abi) + '" '
        return out

    def sig(self, sig, names=True):
        args = []
        for name, t in sig["inputs"]:
            rendered = self.ty(t)
            if names and name == "self":
                args.append(self.self_arg(t))
            elif names and name != "_":
                args.append(name + ": " + rendered)
            else:
                args.append(rendered)
        if sig.get("is_c_variadic"):
            args.append("...")
        out = "(" + ", ".join(args) + ")"
        if sig.get("output") is not None:
            out += " -> " + self.ty(sig["output"])
        return out

    def self_arg(self, t):
        if t.get("generic") == "Self":
            return "self"
        br = t.get("borrowed_ref")
        if br is not None and br["type"].get("generic") == "Self":
            return "&" + (br["lifetime"] + " " if br.get("lifetime") else "") + ("mut " if br["is_mutable"] else "") + "self"
        return "self: " + self.ty(t)

    def generics(self, g):
        params = []
        for p in g["params"]:
            kind = p["kind"]
            if "lifetime" in kind:
                out = p["name"]
                if kind["lifetime"]["outlives"]:
                    out += ": " + " + ".join(kind["lifetime"]["outlives"])
                params.append(out)
            elif "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                out = p["name"]
                if kind["type"]["bounds"]:
                    out += ": " + self.bounds(kind["type"]["bounds"])
                if kind["type"].get("default") is not None:
                    out += " = " + self.ty(kind["type"]["default"])
                params.append(out)
            elif "const" in kind:
                params.append("const " + p["name"] + ": " + self.ty(kind["const"]["type"]))
        return "<" + ", ".join(params) + ">" if params else ""

    def where_clause(self, g, params=False):
        """The where clause; with `params`, the bounds of the generic parameters too."""
        preds = []
        if params:
            for p in g["params"]:
                kind = p["kind"]
                if "type" in kind and kind["type"]["bounds"]:
                    preds.append(p["name"] + ": " + self.bounds(kind["type"]["bounds"]))
                elif "lifetime" in kind and kind["lifetime"]["outlives"]:
                    preds.append(p["name"] + ": " + " + ".join(kind["lifetime"]["outlives"]))
        for w in g["where_predicates"]:
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(
                    self.for_params(bp.get("generic_params") or []) + self.ty(bp["type"]) + ": " + self.bounds(bp["bounds"])
                )
            elif "lifetime_predicate" in w:
                lp = w["lifetime_predicate"]
                preds.append(lp["lifetime"] + ": " + " + ".join(lp["outlives"]))
            elif "eq_predicate" in w:
                ep = w["eq_predicate"]
                rhs = ep["rhs"]
                preds.append(self.ty(ep["lhs"]) + " = " + (self.ty(rhs["type"]) if "type" in rhs else rhs["constant"]["expr"]))
        return " where " + ", ".join(preds) if preds else ""

    @staticmethod
    def attrs(item):
        out = ""
        for attr in item.get("attrs") or []:
            if attr == "non_exhaustive" or (isinstance(attr, str) and "non_exhaustive" in attr):
                out += "#[non_exhaustive] "
        return out

    # ------------------------------------------------------------ the lines

    def function(self, path, item, outer=None):
        """`outer`: the generics of the impl a method is in, whose bounds join its where clause."""
        f = item["inner"]["function"]
        g = f["generics"]
        where = self.where_clause(g)
        if outer is not None:
            extra = self.where_clause(outer, params=True)
            if extra:
                where = where + ", " + extra[len(" where "):] if where else extra
        return self.attrs(item) + "pub " + self.header(f["header"]) + "fn " + path + self.generics(g) + self.sig(f["sig"]) + where

    def add(self, line):
        self.lines.add(line)

    def assoc_items(self, base, ids, in_trait, outer=None):
        for i in ids:
            it = self.item(i)
            if it is None or self.hidden(it):
                continue
            if not in_trait and it.get("visibility") != "public":
                continue
            path = base + "::" + it["name"]
            kind = self.kind(it)
            if kind == "function":
                self.add(self.function(path, it, outer))
            elif kind == "assoc_const":
                c = it["inner"]["assoc_const"]
                self.add("pub const " + path + ": " + self.ty(c["type"]))
            elif kind == "assoc_type":
                a = it["inner"]["assoc_type"]
                line = "pub type " + path + self.generics(a["generics"])
                if a.get("bounds"):
                    line += ": " + self.bounds(a["bounds"])
                if a.get("type") is not None:
                    line += " = " + self.ty(a["type"])
                self.add(line)

    def impls(self, path, ids):
        for i in ids:
            it = self.item(i)
            if it is None or self.hidden(it):
                continue
            imp = it["inner"]["impl"]
            if imp["is_synthetic"] or imp["blanket_impl"] is not None:
                continue
            if imp["trait"] is None:
                # An inherent impl: its items under the type's path, with the impl's type
                # arguments when it has parameters (`TypedFn<A, R>::call`) and their bounds.
                outer = imp["generics"] if imp["generics"]["params"] or imp["generics"]["where_predicates"] else None
                base = path
                if outer is not None:
                    for_ = imp["for"].get("resolved_path")
                    base = path + (self.generic_args(for_.get("args")) if for_ else "")
                self.assoc_items(base, imp["items"], in_trait=False, outer=outer)
                continue
            line = (
                ("unsafe " if imp["is_unsafe"] else "") + "impl" + self.generics(imp["generics"]) + " "
                + ("!" if imp["is_negative"] else "") + self.resolved(imp["trait"]) + " for "
                + self.ty(imp["for"]) + self.where_clause(imp["generics"])
            )
            self.add(line)

    def nameable(self, imp):
        """False for an impl for a type of this crate that no public path names."""
        if imp is None:
            return False
        for_ = imp["inner"]["impl"]["for"]
        rp = for_.get("resolved_path")
        if rp is None:
            return True
        summary = self.paths.get(str(rp["id"]))
        return summary is None or summary["crate_id"] != 0 or rp["id"] in self.public_path

    def fields(self, base, ids, variant=False):
        for i in ids:
            if i is None:
                continue
            f = self.item(i)
            # A variant's fields are as visible as the enum ("default" visibility).
            if f is None or self.hidden(f) or (not variant and f.get("visibility") != "public"):
                continue
            self.add("pub " + base + "::" + f["name"] + ": " + self.ty(f["inner"]["struct_field"]))

    def emit(self, parts, item):
        path = "::".join(parts)
        kind = self.kind(item)
        inner = item["inner"]
        if kind == "module":
            self.add("pub mod " + path)
        elif kind in ("struct", "union"):
            s = inner[kind]
            self.add(self.attrs(item) + "pub " + kind + " " + path + self.generics(s["generics"]) + self.where_clause(s["generics"]))
            if kind == "union":
                self.fields(path, s["fields"])
            elif "plain" in s["kind"]:
                self.fields(path, s["kind"]["plain"]["fields"])
            elif "tuple" in s["kind"]:
                self.fields(path, s["kind"]["tuple"])
            self.impls(path, s["impls"])
        elif kind == "enum":
            e = inner["enum"]
            self.add(self.attrs(item) + "pub enum " + path + self.generics(e["generics"]) + self.where_clause(e["generics"]))
            for v in e["variants"]:
                self.emit(parts + [self.item(v)["name"]], self.item(v))
            self.impls(path, e["impls"])
        elif kind == "variant":
            v = inner["variant"]
            vk = v["kind"]
            line = self.attrs(item) + "pub " + path
            if isinstance(vk, dict) and "tuple" in vk:
                line += "(" + ", ".join(self.ty(self.item(f)["inner"]["struct_field"]) for f in vk["tuple"] if f is not None) + ")"
                self.add(line)
            elif isinstance(vk, dict) and "struct" in vk:
                self.add(line)
                self.fields(path, vk["struct"]["fields"], variant=True)
            else:
                self.add(line)
        elif kind == "trait":
            t = inner["trait"]
            line = "pub " + ("unsafe " if t["is_unsafe"] else "") + "trait " + path + self.generics(t["generics"])
            if t["bounds"]:
                line += ": " + self.bounds(t["bounds"])
            self.add(line + self.where_clause(t["generics"]))
            self.assoc_items(path, t["items"], in_trait=True)
            # Its impls, for other crates' types and blanket ones included (a type's own are
            # listed with the type; the set keeps one line of each).
            self.impls(path, [i for i in t["implementations"] if self.nameable(self.item(i))])
        elif kind == "function":
            self.add(self.function(path, item))
        elif kind == "constant":
            self.add("pub const " + path + ": " + self.ty(inner["constant"]["type"]))
        elif kind == "static":
            s = inner["static"]
            self.add("pub static " + ("mut " if s["is_mutable"] else "") + path + ": " + self.ty(s["type"]))
        elif kind == "type_alias":
            ta = inner["type_alias"]
            self.add("pub type " + path + self.generics(ta["generics"]) + " = " + self.ty(ta["type"]))
        elif kind == "macro":
            self.add("pub macro " + path + "!")
        elif kind == "use":
            use = inner["use"]
            self.add("pub use " + path + " = " + self.path_of(use["id"], use["source"]))
        else:
            self.add("pub " + kind + " " + path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: public-api.py <rustdoc JSON of the crate>")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    api = Api(doc)
    api.collect_paths()
    api.walk(api.emit)
    for line in sorted(api.lines):
        print(line)


if __name__ == "__main__":
    main()
