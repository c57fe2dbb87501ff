#!/usr/bin/env python3
"""Rewrites Nibble's SystemVerilog into the subset Yosys 0.23's `read_verilog -sv` reads.

Usage: sv_compat.py OUT_DIR FILE.sv...   (writes OUT_DIR/<basename> for each file)

The RTL itself is not edited: this writes equivalent copies for synthesis only. Each rewrite
is a spelling change that keeps every value and width (docs/area-energy.md lists them):
  1. int'(e) / longint'(e)          -> $signed(32'(e)) / $signed(64'(e))
  2. <enum type>'(e), <vector type>'(e) -> <width>'(e)       (their base types are unsigned)
  3. the package's constant tables  localparam <struct_t> [N-1:0] Table = '{i: '{field: v}}
     become one constant function per field, Table__field(i), and every Table[i].field
     (and a generate-local alias `localparam <struct_t> Info = Table[i];` used as Info.field)
     becomes a call of that function. The fields' values are copied from the table text,
     so the tables stay the single source of truth.
  4. (with the quantizer's files) a package importing another package's typedefs, enum items
     and functions: the types and items are spelled out, the functions copied in as
     <package>__<function>; a chain `if (c) return a; if (d) return b; return e;` becomes
     if / else if / else; `f32_t'(e)` (a vector typedef) -> `32'(e)`; `-W'(e)` -> `-(W'(e))`;
     a struct-table alias in a parameter port list; part selects of a flattened array's
     element (x[i][hi:lo], x[i][b -: w]); packed 2-D arrays with one unpacked dimension.
Anything this script does not recognise is left as it is (and Yosys then reports it).
"""
import os
import re
import sys


def match_paren(s, i):
    """s[i] == '(' -> index of the matching ')'."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced parentheses")


def rewrite_casts(s, cast, prefix, suffix):
    """cast'( e ) -> prefix( e )suffix, for the exact cast keyword `cast`."""
    pat = re.compile(r"(?<![\w$'])" + re.escape(cast) + r"'\(")
    while True:
        m = pat.search(s)
        if not m:
            return s
        open_i = m.end() - 1
        close_i = match_paren(s, open_i)
        s = s[: m.start()] + prefix + s[open_i : close_i + 1] + suffix + s[close_i + 1 :]


def rewrite_unary_casts(s):
    """A unary - or ~ before a size cast, -W'(e) or -(W + 1)'(e), -> -(W'(e)): Yosys 0.23
    applies the operator to the size, (-W)'(e) ("Static cast with zero or negative size")."""
    out, pos = [], 0
    for m in re.finditer(r"[-~]", s):
        if m.start() < pos:
            continue
        prev = s[:m.start()].rstrip()
        if prev and prev[-1] not in "=(?:,[{&|^+-*/%<>!~":
            continue  # a binary operator
        j = m.end()
        while j < len(s) and s[j] in " \t\n":
            j += 1
        if j < len(s) and s[j] == "(":
            k = match_paren(s, j) + 1
        else:
            w = re.match(r"[\w:]+", s[j:])
            if not w:
                continue
            k = j + w.end()
        if not s.startswith("'(", k):
            continue
        end = match_paren(s, k + 1)
        out.append(s[pos:m.end()] + "(" + s[j:end + 1] + ")")
        pos = end + 1
    out.append(s[pos:])
    return "".join(out)


def strip_comments(s):
    s = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), s, flags=re.S)
    return re.sub(r"//[^\n]*", "", s)


def enum_widths(texts):
    widths = {}
    for t in texts:
        for m in re.finditer(r"typedef\s+enum\s+logic\s*\[([^\]:]+):\s*0\s*\]\s*\{[^}]*\}\s*(\w+)\s*;",
                             t):
            widths[m.group(2)] = "(%s)+1" % m.group(1).strip()
        for m in re.finditer(r"typedef\s+enum\s+logic\s*\{[^}]*\}\s*(\w+)\s*;", t):
            widths[m.group(1)] = "1"
    return widths


def enum_items(texts):
    items = {}
    for t in texts:
        for e in re.finditer(r"typedef\s+enum[^{]*\{([^}]*)\}", t):
            items.update({k: v.strip() for k, v in re.findall(r"(\w+)\s*=\s*([^,}]+)", e.group(1))})
    return items


def struct_fields(texts, enum_w):
    """struct type -> [(field, return type text)]"""
    structs = {}
    for t in texts:
        for m in re.finditer(r"typedef\s+struct\s+packed\s*\{(.*?)\}\s*(\w+)\s*;", t, flags=re.S):
            fields = []
            for decl in strip_comments(m.group(1)).split(";"):
                decl = decl.strip()
                if not decl:
                    continue
                typ, name = decl.rsplit(None, 1)
                if typ in enum_w:
                    typ = "logic [%s-1:0]" % eval_width(enum_w[typ], PKG_VALUES)
                fields.append((name, typ))
            structs[m.group(2)] = fields
    return structs


def rewrite_tables(s, structs, tables):
    """Replaces each table declaration by per-field functions; records the table's struct."""
    pat = re.compile(r"localparam\s+(\w+)\s*\[[^\]]*\]\s*(\w+)\s*=\s*'\{")
    while True:
        m = pat.search(s)
        if not m or m.group(1) not in structs:
            return s
        stype, name = m.group(1), m.group(2)
        # the table body: from "'{" to the matching "};"
        start = m.end() - 1
        depth, j = 0, start
        while True:
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = strip_comments(s[start + 1 : j])
        end = s.index(";", j) + 1
        rows = {}
        for rm in re.finditer(r"(\d+)\s*:\s*'\{(.*?)\}", body, flags=re.S):
            vals = {}
            for fm in re.finditer(r"(\w+)\s*:\s*([^,]+)", rm.group(2)):
                vals[fm.group(1)] = fm.group(2).strip()
            rows[int(rm.group(1))] = vals
        funcs = []
        for field, typ in structs[stype]:
            funcs.append(f"  function automatic {typ} {name}__{field}(input integer i);\n"
                         f"    {name}__{field} = '0;\n    case (i)\n")
            for i in sorted(rows):
                v = rows[i][field]
                funcs.append(f"      {i}: {name}__{field} = {ENUM_ITEMS.get(v, v)};\n")
            funcs.append("      default: ;\n    endcase\n  endfunction\n")
        tables[name] = stype
        s = s[: m.start()] + "".join(funcs) + s[end:]


def rewrite_table_uses(s, tables):
    for name in tables:
        # Table[idx].field -> Table__field(idx)
        s = re.sub(r"\b%s\[([^\]]+)\]\.(\w+)" % name, r"%s__\2(\1)" % name, s)
        # localparam <struct_t> Alias = Table[idx];  ... Alias.field -> Table__field(idx)
        # (also in a parameter port list: `#(localparam <struct_t> Alias = Table[idx], ...`)
        for m in list(re.finditer(r"localparam\s+%s\s+(\w+)\s*=\s*%s\[([^\]]+)\]\s*([;,])"
                                  % (tables[name], name), s)):
            alias, idx, end = m.group(1), m.group(2), m.group(3)
            # one localparam per field (a function's result cannot be bit-selected)
            s = s.replace(m.group(0), (" " if end == ";" else ",\n  ").join(
                "localparam %s %s__%s = %s__%s(%s)%s" % (typ, alias, field, name, field, idx,
                                                         end if end == ";" else "")
                for field, typ in STRUCTS[tables[name]]) + ("" if end == ";" else ","))
            s = re.sub(r"\b%s\.(\w+)" % alias, r"%s__\1" % alias, s)
    return s


def rewrite_returns(s):
    """`return e;` -> `<function> = e;`; `if (c) return a; return b;` -> if/else."""
    def one(m):
        head, name, body = m.group(1), m.group(2), m.group(3)
        # a chain `if (c1) return a; if (c2) return b; ... return z;` -> if / else if / else
        body = re.sub(r"if\s*\((.*?)\)\s*return\s+([^;]*);\s*(?=if\s*\(.*?\)\s*return\b)",
                      lambda r: "if (%s) %s = %s;\n    else " % (r.group(1), name, r.group(2)), body)
        body = re.sub(r"if\s*\((.*?)\)\s*return\s+([^;]*);\s*return\s+([^;]*);",
                      lambda r: "if (%s) %s = %s;\n    else %s = %s;"
                      % (r.group(1), name, r.group(2), name, r.group(3)), body)
        if re.search(r"\breturn\b(?![^;]*;\s*$)", body):
            raise SystemExit("sv_compat: function %s: a `return` that is not the last "
                             "statement (Yosys 0.23 has no `return`)" % name)
        body = re.sub(r"\breturn\s+([^;]*);", r"%s = \1;" % name, body)
        return head + body + "endfunction"
    return re.sub(r"(function\s+automatic\s+(?:[^;()]|\((?:[^();]|\([^();]*\))*\))*?\b(\w+)\s*\([^;]*;)(.*?)endfunction",
                  one, s, flags=re.S)


PACKAGE = r"\bpackage\s+(\w+)\s*;(.*?)\bendpackage"  # name, body
FUNCTION_NAME = r"function\s+automatic\s+(?:[^;()]|\((?:[^();]|\([^();]*\))*\))*?\b(\w+)\s*\("  # up to `name (`


def packages(texts):
    """(name, body) of every package in texts."""
    for t in texts:
        for m in re.finditer(PACKAGE, t, flags=re.S):
            yield m.group(1), m.group(2)


def package_names(texts):
    """package -> the names it declares (localparams, typedefs, functions, enum items)."""
    names = {}
    for pkg, body in packages(texts):
        n = set(re.findall(r"localparam\s+[^=;]*?\b(\w+)\s*=", body))
        n |= set(re.findall(r"typedef\b[^;]*?\b(\w+)\s*;", body))
        n |= set(re.findall(FUNCTION_NAME, body))
        for e in re.finditer(r"typedef\s+enum[^{]*\{([^}]*)\}", body):
            n |= set(re.findall(r"(\w+)\s*=", e.group(1)))
        names[pkg] = n
    return names


def package_localparams(texts):
    """package -> {localparam name: its value expression}"""
    return {pkg: dict(re.findall(r"localparam\s+[^=;]*?\b(\w+)\s*=\s*([^;]*);", body))
            for pkg, body in packages(texts)}


def package_typedefs(texts):
    """package -> {typedef name: the type it names, as a vector `logic [..]`} (typedefs of a
    plain vector or of an enum; structs are not listed)."""
    return {pkg: {tm.group(2): tm.group(1)
                  for tm in re.finditer(r"typedef\s+(?:enum\s+)?(logic\s*(?:\[[^\]]*\])?)\s*"
                                        r"(?:\{[^}]*\}\s*)?(\w+)\s*;", body)}
            for pkg, body in packages(texts)}


def package_functions(texts):
    """package -> {function name: its text, `function ... endfunction`}"""
    return {pkg: {f.group(1): f.group(0) for f in re.finditer(FUNCTION_NAME + r".*?endfunction", body, flags=re.S)}
            for pkg, body in packages(texts)}


def rewrite_package_imports(s, names, values, typedefs=None, funcs=None):
    """`import q::*;` inside a package (Yosys 0.23 can neither import nor name q::x there):
    each use of a localparam of q is replaced by its value expression, in parentheses; of a
    vector or enum typedef of q, by its type `logic [..]`; of an enum item of q, by its value;
    of a function of q, by a call of a copy of that function made in this package under the
    name q__function (whose own uses of q's names are rewritten the same way)."""
    typedefs = typedefs or {}
    funcs = funcs or {}

    def one(m):
        body = m.group(2)
        imported = re.findall(r"\bimport\s+(\w+)::\*\s*;", body)
        for q in imported:
            body = re.sub(r"\bimport\s+%s::\*\s*;" % q, "", body)
        copies = []
        for _ in range(16):  # until no name of an imported package is left
            before = body + "".join(copies)
            for q in imported:
                for n in sorted(names.get(q, ())):
                    pat = r"(?<!::)(?<![\w$'])%s\b" % n
                    if not re.search(pat, body + "".join(copies)):
                        continue
                    if n in values.get(q, {}):
                        for _ in range(8):  # a value naming other localparams of q
                            body = re.sub(pat, "(%s)" % values[q][n], body)
                            copies = [re.sub(pat, "(%s)" % values[q][n], c) for c in copies]
                            unresolved = [k for k in values[q]
                                          if re.search(r"(?<![\w:$'])%s\b" % k, values[q][n])]
                            if not unresolved:
                                break
                            n = unresolved[0]
                            pat = r"(?<!::)(?<![\w$'])%s\b" % n
                    elif n in typedefs.get(q, {}):
                        body = re.sub(pat, typedefs[q][n], body)
                        copies = [re.sub(pat, typedefs[q][n], c) for c in copies]
                    elif n in ENUM_ITEMS:
                        body = re.sub(pat, "(%s)" % ENUM_ITEMS[n], body)
                        copies = [re.sub(pat, "(%s)" % ENUM_ITEMS[n], c) for c in copies]
                    elif n in funcs.get(q, {}):
                        new = "%s__%s" % (q, n)
                        body = re.sub(pat, new, body)
                        copies = [re.sub(pat, new, c) for c in copies]
                        copies.append("\n  " + re.sub(pat, new, funcs[q][n]) + "\n")
                    else:
                        raise SystemExit("sv_compat: package %s uses %s::%s, which is neither "
                                         "a localparam, a vector or enum type, an enum item nor "
                                         "a function" % (m.group(1), q, n))
            if body + "".join(copies) == before:
                break
        return "package %s;%s%sendpackage" % (m.group(1), "".join(copies), body)
    return re.sub(PACKAGE, one, s, flags=re.S)


def rewrite_module_imports(s, names):
    """`module m import q::*; ...` (Yosys 0.23 has no `import`): the import is removed and
    every use of one of q's names in the module is spelled q::name."""
    out, pos = [], 0
    for m in re.finditer(r"\bmodule\s+(\w+)\s*((?:import\s+\w+::\*\s*;\s*)+)", s):
        end = s.index("endmodule", m.end())
        body = s[m.end():end]
        for q in re.findall(r"import\s+(\w+)::\*", m.group(2)):
            for n in sorted(names.get(q, ()), key=len, reverse=True):
                body = re.sub(r"(?<!::)(?<![\w$'.`])%s\b(?!\s*::)" % n, "%s::%s" % (q, n), body)
        # a size cast by a qualified name, q::W'(e), is read by Yosys only as (q::W)'(e)
        body = re.sub(r"(?<![\w:])(\w+::\w+)'\(", r"(\1)'(", body)
        out.append(s[pos:m.start()] + "module %s " % m.group(1) + body)
        pos = end
    out.append(s[pos:])
    return "".join(out)


def rewrite_function_enum_items(s):
    """Enum items inside functions -> their values (Yosys 0.23 calls an enum item a
    non-constant expression in a constant function)."""
    def one(m):
        body = m.group(2)
        for k, v in ENUM_ITEMS.items():
            body = re.sub(r"(?<!::)(?<![\w$'.`])%s\b" % k, "(%s)" % v, body)
        return m.group(1) + body + "endfunction"
    return re.sub(r"(function\s+automatic\s+(?:[^;()]|\((?:[^();]|\([^();]*\))*\))*?\b\w+\s*\([^;]*;)(.*?)endfunction",
                  one, s, flags=re.S)


def rewrite_function_inits(s):
    """`<type> x = e;` declarations inside functions -> declaration, then `x = e;`."""
    def one(m):
        head, body = m.group(1), m.group(2)
        decls = []
        def split(d):
            decls.append("    %s %s;\n" % (d.group(2), d.group(3)))
            return "%s%s = %s;" % (d.group(1), d.group(3), d.group(4))
        body = re.sub(r"(\n\s*)((?:int|integer|logic|bit)\b(?:\s+unsigned)?(?:\s*\[[^\]]*\])?)"
                      r"\s+(\w+)\s*=\s*([^;]*);", split, body)
        return head + "\n" + "".join(decls) + body + "endfunction"
    return re.sub(r"(function\s+automatic\s+(?:[^;()]|\((?:[^();]|\([^();]*\))*\))*?\b\w+\s*\([^;]*;)(.*?)endfunction",
                  one, s, flags=re.S)


KEYWORDS = {"input", "output", "inout", "logic", "wire", "signed", "unsigned", "var"}


def bracket_groups(s, i):
    """Consecutive [..] groups starting at s[i] (balanced) -> ([contents], end index)."""
    groups = []
    while True:
        j = i
        while j < len(s) and s[j] in " \t\n":
            j += 1
        if j >= len(s) or s[j] != "[":
            return groups, i
        depth, k = 0, j
        while True:
            if s[k] == "[":
                depth += 1
            elif s[k] == "]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        groups.append(s[j + 1:k])
        i = k + 1


def is_range(g):
    """[a:b], [a -: w], [a +: w] (not the :: of a package name)"""
    return re.search(r"(?<!:):(?!:)", g) is not None


def dim_size(d):
    hi, lo = re.match(r"^(.*?)(?<!:):(?!:)(.*)$", d, flags=re.S).groups()
    lo = lo.strip()
    m = re.fullmatch(r"(.*)-\s*1", hi.strip())
    if lo == "0" and m:
        return "(%s)" % m.group(1).strip()
    return "((%s)-(%s)+1)" % (hi.strip(), lo)


def flatten_arrays(s):
    """Multi-dimensional packed arrays (and 1-D unpacked arrays used only as port
    connections) -> one flat vector; x[i] -> x[(i)*W +: W], x[i][j] -> ... (same bits: a
    packed array's element i is bits [i*W +: W]). Yosys 0.23 reads neither."""
    out, pos = [], 0
    for mm in re.finditer(r"\bmodule\b(.*?)\bendmodule\b", s, flags=re.S):
        body = mm.group(1)
        arrays = {}  # name -> [inner sizes...] (sizes of dims 2..k)
        # packed: <dims>{2,} name[, name]
        def packed(m):
            groups, end = bracket_groups(m.group(0), 0)
            return None
        # packed arrays with one unpacked dimension: logic [A-1:0][W-1:0] name [U];
        for um in list(re.finditer(r"\b(?:logic|wire|bit)(\s+signed)?\s*((?:\[[^\[\]]+\]\s*){2,})"
                                   r"(\w+)\s*\[([^\[\]:]+)\]\s*;", body)):
            dims = re.findall(r"\[([^\[\]]+)\]", um.group(2))
            if not all(is_range(d) for d in dims):
                continue
            sizes = ["(%s)" % um.group(4).strip()] + [dim_size(d) for d in dims]
            arrays[um.group(3)] = sizes
            body = body.replace(um.group(0), "logic%s [%s-1:0] %s;" % (
                um.group(1) or "", "*".join(sizes), um.group(3)))
        i = 0
        new = []
        for dm in re.finditer(r"(?<![\w\]])((?:\[[^\[\]]+\]\s*){2,})((?:\w+\s*,\s*)*\w+)(?=\s*[,;)=])",
                              body):
            prefix = body[max(0, dm.start() - 40):dm.start()]
            if not re.search(r"\b(logic|wire|bit|reg)\b(\s+signed)?\s*$", prefix):
                continue
            dims = [g for g in re.findall(r"\[([^\[\]]+)\]", dm.group(1))]
            if not all(":" in d for d in dims):
                continue
            names = [n.strip() for n in dm.group(2).split(",")]
            names = [n for n in names if n not in KEYWORDS]
            sizes = [dim_size(d) for d in dims]
            for n in names:
                arrays[n] = sizes
            new.append(body[i:dm.start()])
            new.append("[%s-1:0] %s" % ("*".join(sizes), dm.group(2)))
            i = dm.end()
        new.append(body[i:])
        body = "".join(new)
        # unpacked arrays only connected to ports: logic [signed] [W] name [N];
        for um in list(re.finditer(r"\blogic\s+(signed\s+)?\[([^\[\]]+)\]\s*(\w+)\s*\[(\w+)\]\s*;", body)):
            name = um.group(3)
            uses = re.findall(r"(?<![\w.$])%s\b" % name, body)
            conns = re.findall(r"\.\w+\s*\(\s*%s\b[^()]*\)" % name, body)
            if len(uses) - 1 != len(conns):
                continue
            sizes = ["(%s)" % um.group(4), dim_size(um.group(2))]
            arrays[name] = sizes
            body = body.replace(um.group(0), "logic [%s-1:0] %s;" % ("*".join(sizes), name))
        # two-dimensional unpacked arrays of a package's vector type: f32_t x [A][B];
        for um in list(re.finditer(r"(?<![\w:])((?:\w+::)?(\w+))\s+(\w+)\s*\[([^\[\]:]+)\]\s*"
                                   r"\[([^\[\]:]+)\]\s*;", body)):
            if um.group(2) not in TYPE_WIDTHS:
                continue
            sizes = ["(%s)" % um.group(4).strip(), "(%s)" % um.group(5).strip(),
                     "(%s)" % TYPE_WIDTHS[um.group(2)]]
            arrays[um.group(3)] = sizes
            body = body.replace(um.group(0), "logic [%s-1:0] %s;" % ("*".join(sizes), um.group(3)))
        # indexing
        for n, sizes in arrays.items():
            res, k = [], 0
            for im in re.finditer(r"(?<![\w.$])%s\b(?=\s*\[)" % n, body):
                if im.start() < k:
                    continue
                groups, end = bracket_groups(body, im.end())
                groups = groups[:len(sizes)]
                j = len(groups)
                # x[i]..[a:b] (also -: and +:): a part select of one innermost element
                part = None
                if j == len(sizes) and j > 1 and is_range(groups[-1]):
                    part = groups[-1]
                    groups = groups[:-1]
                if any(is_range(g) for g in groups):
                    raise SystemExit("sv_compat: a part select of the array %s" % n)
                off = "(%s)" % groups[0]
                for g, sz in zip(groups[1:], sizes[1:len(groups)]):
                    off = "(%s*%s+(%s))" % (off, sz, g)
                if part is not None:
                    base = "%s*%s" % (off, sizes[-1])
                    pm = re.match(r"^(.*?)([-+]?)(?<!:):(?!:)(.*)$", part, flags=re.S)
                    if pm is None:
                        raise SystemExit("sv_compat: cannot read the part select [%s] of %s" % (part, n))
                    if pm.group(2):  # b -: w, b +: w
                        sel = "[%s+(%s) %s: %s]" % (base, pm.group(1).strip(), pm.group(2),
                                                   pm.group(3).strip())
                    else:  # hi:lo, as lo +: width (the width is constant, the base need not be)
                        hi, lo = pm.group(1).strip(), pm.group(3).strip()
                        sel = "[%s+(%s) +: ((%s)-(%s)+1)]" % (base, lo, hi, lo)
                elif j == len(sizes):
                    sel = "[%s]" % off
                else:
                    w = "*".join(sizes[j:])
                    sel = "[%s*%s +: %s]" % (off, w, w)
                # end of the groups consumed
                _, end = bracket_groups(body, im.end()) if False else (None, None)
                e2 = im.end()
                for _ in range(j):
                    _, e2 = bracket_groups(body[:], e2) if False else (None, e2)
                    gg, e3 = bracket_groups(body, e2)
                    # consume exactly one group
                    depth, q = 0, body.index("[", e2)
                    while True:
                        if body[q] == "[":
                            depth += 1
                        elif body[q] == "]":
                            depth -= 1
                            if depth == 0:
                                break
                        q += 1
                    e2 = q + 1
                res.append(body[k:im.start()] + n + sel)
                k = e2
            res.append(body[k:])
            body = "".join(res)
        out.append(s[pos:mm.start()] + "module" + body + "endmodule")
        pos = mm.end()
    out.append(s[pos:])
    return "".join(out)


PKG_VALUES = {}
STRUCTS = {}
TYPE_WIDTHS = {}  # typedef logic [W-1:0] name; in a package -> "W" evaluated
ENUM_ITEMS = {}


def main():
    out_dir, files = sys.argv[1], sys.argv[2:]
    texts = [strip_comments(open(f).read()) for f in files]
    enum_w = enum_widths(texts)
    pkg_names = package_names(texts)
    pkg_values = package_localparams(texts)
    PKG_VALUES.update(pkg_values)
    ENUM_ITEMS.update(enum_items(texts))
    for tx in texts:
        for m in re.finditer(r"typedef\s+logic\s*\[([^\]:]+)-\s*1\s*:\s*0\s*\]\s*(\w+)\s*;", tx):
            TYPE_WIDTHS[m.group(2)] = eval_width(m.group(1), pkg_values)
    structs = struct_fields(texts, enum_w)
    STRUCTS.update(structs)
    tables = {}
    texts = [rewrite_tables(t, structs, tables) for t in texts]
    os.makedirs(out_dir, exist_ok=True)
    texts = [rewrite_returns(rewrite_table_uses(t, tables)) for t in texts]
    pkg_typedefs = package_typedefs(texts)
    pkg_funcs = package_functions(texts)
    pkg_names = package_names(texts)  # with the tables' field functions
    texts_out = []
    for f, t in zip(files, texts):
        t = rewrite_package_imports(t, pkg_names, pkg_values, pkg_typedefs, pkg_funcs)
        t = rewrite_function_inits(t)
        t = rewrite_function_enum_items(t)
        t = rewrite_casts(t, "longint", "$signed(64'", ")")
        t = rewrite_casts(t, "int", "$signed(32'", ")")
        for e, w in enum_w.items():
            t = rewrite_casts(t, e, "%s'" % eval_width(w, pkg_values), "")
        for v, w in TYPE_WIDTHS.items():  # vector typedefs are unsigned: a size cast
            t = rewrite_casts(t, v, "%s'" % w, "")
        t = rewrite_unary_casts(t)
        texts_out.append(t)
    pkg_names = package_names(texts_out)  # with the tables' field functions
    for f, t in zip(files, texts_out):
        t = rewrite_module_imports(t, pkg_names)
        t = flatten_arrays(t)
        twin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "twins",
                            os.path.basename(f))
        if os.path.isfile(twin):  # a module Yosys 0.23 cannot read at all (see the twin)
            t = open(twin).read()
        with open(os.path.join(out_dir, os.path.basename(f)), "w") as o:
            o.write(t)


def eval_width(w, pkg_values):
    """An enum's width as a number (its expression may name package localparams)."""
    env = {}
    for vals in pkg_values.values():
        env.update(vals)
    for _ in range(16):
        try:
            return str(int(eval(w, {"__builtins__": {}}, {})))
        except NameError as e:
            name = str(e).split("'")[1]
            if name not in env:
                break
            w = re.sub(r"\b%s\b" % name, "(%s)" % env[name], w)
        except Exception:
            break
    raise SystemExit("sv_compat: cannot evaluate the enum width %s" % w)


if __name__ == "__main__":
    main()
