# Reads config/isas.txt (the ISA registry), the kernel list (config/ml_kernels.h)
# and the capability tables (kernels/<isa>/kernels_<isa>.h), and prints what one
# consumer needs:
#   awk -f tools/isas.awk -v want=names config/isas.txt    every ISA name, once, lowest first
#   ... -v want=chain -v isa=I -v arch=A                   I's fallback chain on A, lowest first
#                                                          (nothing if I does not build for A)
#   ... -v want=flags -v isa=I -v arch=A                   the gcc/clang flags of kernels/I/ on A
#   ... -v want=msvc -v isa=I                              the MSVC flags of kernels/I/
#   ... -v want=rows                                       isa|arch|run-on, a line each (tests/matrix.sh)
#   ... -v want=arch -v arch=A                             A's cross prefix|qemu-user program|label
#   ... -v want=header -v arch=A                           the C header ml_isas_gen.h (core/)
#   ... -v want=bind -v isa=I -v arch=A                    the C header ml_bind_gen.h (config/)
# A line serves architecture A if its arch column is A or "any".
/^[[:space:]]*(#|$)/ { next }
# The architectures: "arch <name> <cross prefix> <qemu-user> <label>".
$1 == "arch" { cross[$2] = $3; qemu[$2] = $4; label[$2] = $5; next }
{
    n++
    name[n] = $1; parent[n] = $2; arch_of[n] = $3; needs[n] = $4; run_on[n] = $5; msvc[n] = $6
    f = ""
    for (i = 7; i <= NF; i++) f = f (f == "" ? "" : " ") $i
    flags[n] = (f == "-") ? "" : f
    if (!($1 in first)) first[$1] = n
}
function die(msg) { print "tools/isas.awk: " msg > "/dev/stderr"; failed = 1; exit 1 }
function line_of(x, a,    i) {  # the line of ISA x for architecture a; 0 if none
    for (i = 1; i <= n; i++)
        if (name[i] == x && (arch_of[i] == a || arch_of[i] == "any")) return i
    return 0
}
function chain(x, a,    l) {
    l = line_of(x, a)
    if (!l) return ""
    return parent[l] == "-" ? x : chain(parent[l], a) " " x
}
# C text of the ISA's lines merged: the architecture mask and the feature mask.
function arch_mask(x,    i, s) {
    s = ""
    for (i = 1; i <= n; i++)
        if (name[i] == x) s = s (s == "" ? "" : " | ") (arch_of[i] == "any" ? "ML_ARCH_ANY" : "ML_ARCH_BIT(" toupper(arch_of[i]) ")")
    return s
}
function need_mask(x,    l, k, i, f, s) {
    l = first[x]
    if (needs[l] == "-") return "0"
    k = split(needs[l], f, ",")
    s = ""
    for (i = 1; i <= k; i++) s = s (i > 1 ? " | " : "") "ML_FBIT(ML_F_" f[i] ")"
    return s
}
# The kernel list: the X(ret, name, NAME, ...) lines of config/ml_kernels.h, into kname[1..nk].
function read_kernels(    file, l) {
    file = "config/ml_kernels.h"
    while ((getline l < file) > 0)
        if (match(l, /^[ \t]*X\([^,]+, *[a-z0-9_]+, *[A-Z0-9_]+,/)) {
            l = substr(l, RSTART, RLENGTH)
            sub(/^[ \t]*X\([^,]+, */, "", l)
            sub(/,.*/, "", l)
            kname[++nk] = l
        }
    close(file)
    if (nk == 0) die("no kernel found in " file)
}
# The capability table kernels/<x>/kernels_<x>.h as the compiler for `arch` reads it:
# has[x, kernel] = 1 for each "#define ML_HAS_<KERNEL>_<X> 1"; absent means 0 (the
# parent serves it). The only conditions understood are the include guard and
# #ifdef/#ifndef __aarch64__ (with #else); anything else is an error.
function read_caps(x,    file, l, d, on, w, v, k, pre) {
    if (x in caps_read) return
    caps_read[x] = 1
    if (first[x] && parent[first[x]] == "-") return  # the floor implements every kernel
    file = "kernels/" x "/kernels_" x ".h"
    d = 0; on[0] = 1
    pre = "ML_HAS_"
    while ((getline l < file) > 0) {
        if (l ~ /^[ \t]*#[ \t]*ifn?def[ \t]+ML_KERNELS_[A-Z0-9_]+_H/) { d++; on[d] = on[d - 1]; continue }
        if (l ~ /^[ \t]*#[ \t]*ifdef[ \t]+__aarch64__/) { d++; on[d] = on[d - 1] && arch == "aarch64"; ours[d] = 1; continue }
        if (l ~ /^[ \t]*#[ \t]*ifndef[ \t]+__aarch64__/) { d++; on[d] = on[d - 1] && arch != "aarch64"; ours[d] = 1; continue }
        if (l ~ /^[ \t]*#[ \t]*else/) {
            if (!ours[d]) die(file ": #else of a condition tools/isas.awk does not read")
            on[d] = on[d - 1] && !on[d]; continue
        }
        if (l ~ /^[ \t]*#[ \t]*endif/) { ours[d] = 0; d--; continue }
        if (l ~ /^[ \t]*#[ \t]*(if|elif)/) die(file ": a condition tools/isas.awk does not read: " l)
        if (!on[d] || l !~ /^[ \t]*#[ \t]*define[ \t]+ML_HAS_/) continue
        split(l, w, /[ \t]+/)
        v = w[3]
        for (k = 1; k <= nk; k++)
            if (w[2] == pre toupper(kname[k]) "_" toupper(x)) break
        if (k > nk) die(file ": " w[2] " names no kernel of config/ml_kernels.h")
        if (v != "0" && v != "1") die(file ": " w[2] " is '" v "', not 0 or 1")
        has[x, kname[k]] = v + 0
    }
    close(file)
}
function implements(x, k) {
    read_caps(x)
    return (first[x] && parent[first[x]] == "-") || has[x, k] == 1
}
# The ISA whose folder runs kernel k in build x (on this arch, or x's first line elsewhere).
function served(x, k,    l) {
    l = line_of(x, arch)
    if (!l) l = first[x]
    if (parent[l] == "-" || implements(x, k)) return x
    return served(parent[l], k)
}
END {
    if (failed) exit 1
    if (want == "names") {
        for (i = 1; i <= n; i++) if (first[name[i]] == i) printf "%s ", name[i]
        print ""
    } else if (want == "chain") {
        print chain(isa, arch)
    } else if (want == "flags") {
        l = line_of(isa, arch)
        if (l) print flags[l]
    } else if (want == "msvc") {
        l = line_of(isa, "x86")
        if (l && msvc[l] != "-") print msvc[l]
    } else if (want == "rows") {
        for (i = 1; i <= n; i++) print name[i] "|" arch_of[i] "|" run_on[i]
    } else if (want == "arch") {
        if (arch in cross) print (cross[arch] == "-" ? "" : cross[arch]) "|" (qemu[arch] == "-" ? "" : qemu[arch]) "|" label[arch]
    } else if (want == "header") {
        read_kernels()
        print "/* Generated by the build from config/isas.txt, config/ml_kernels.h and the"
        print " * kernels/<isa>/kernels_<isa>.h tables (tools/isas.awk): do not edit. */"
        print "#ifndef ML_ISAS_GEN_H"
        print "#define ML_ISAS_GEN_H\n"
        print "/* Every ISA, lowest first: X(isa, ISA, parent, architectures, needed features). */"
        print "#define ML_ISAS(X) \\"
        for (i = 1; i <= n; i++) {
            if (first[name[i]] != i) continue
            printf "    X(%s, %s, %s, %s, %s) \\\n", name[i], toupper(name[i]),
                   parent[i] == "-" ? name[i] : parent[i], arch_mask(name[i]), need_mask(name[i])
        }
        print ""
        printf "/* The kernels of config/ml_kernels.h, in its order. */\n#define ML_KERNEL_N %d\n", nk
        printf "#define ML_KERNEL_NAMES {"
        for (k = 1; k <= nk; k++) printf "%s\"%s\"", (k > 1 ? ", " : ""), kname[k]
        print "}\n"
        print "/* ML_SERVED_<isa>: for each kernel, the ISA whose folder runs it in that build"
        print " * (its own if kernels_<isa>.h says ML_HAS_<KERNEL>_<ISA> 1, else its parent's). */"
        for (i = 1; i <= n; i++) {
            if (first[name[i]] != i) continue
            printf "#define ML_SERVED_%s {", name[i]
            for (k = 1; k <= nk; k++) printf "%s\"%s\"", (k > 1 ? ", " : ""), served(name[i], kname[k])
            print "}"
        }
        print "\n#endif"
    } else if (want == "bind") {
        read_kernels()
        l = line_of(isa, arch)
        if (!l) die(isa " does not build for " arch)
        print "/* Generated by the build from config/isas.txt, config/ml_kernels.h and the"
        print " * kernels/<isa>/kernels_<isa>.h tables (tools/isas.awk): do not edit."
        printf " * ISA=%s on %s, chain %s. */\n", isa, arch, chain(isa, arch)
        print "#ifndef ML_BIND_GEN_H"
        print "#define ML_BIND_GEN_H\n"
        print "/* The binding: each generic kernel name is the symbol of the folder that serves"
        print " * it in this build (config/ml_config.h). */"
        for (k = 1; k <= nk; k++) {
            s = served(isa, kname[k])
            printf "#define ml_k_%-12s %-28s /* kernels/%s/ */\n", kname[k], "ml_k_" kname[k] "_" s, s
        }
        print "\n/* The capability tables, and 0 for what a table does not list; the compiler"
        print " * checks that tools/isas.awk read each table as it does. */"
        for (i = 1; i <= n; i++) {
            x = name[i]
            if (first[x] != i || parent[i] == "-") continue
            X = toupper(x)
            printf "#include \"kernels/%s/kernels_%s.h\"\n", x, x
            cond = ""
            for (k = 1; k <= nk; k++) {
                K = toupper(kname[k])
                printf "#ifndef ML_HAS_%s_%s\n#define ML_HAS_%s_%s 0\n#endif\n", K, X, K, X
                cond = cond (k > 1 ? " || " : "") "ML_HAS_" K "_" X " != " (implements(x, kname[k]) ? 1 : 0)
            }
            printf "#if %s\n#error \"tools/isas.awk read kernels/%s/kernels_%s.h unlike the compiler\"\n#endif\n", cond, x, x
        }
        print "\n#endif"
    }
}
