# The ARM builds the instruction counters measure (tools/insn_per_token.sh,
# tools/insn_matmul.sh), sourced by them from the repository root: ROWS, one
# per build and qemu CPU, from the ISA registry (config/isas.txt): each ARM
# line on each CPU of its "run on" column, and scalar on its architecture's
# first CPU. CPUs that only change the core model (cortex-a7 after cortex-a15)
# count the same instructions and are left out; each SVE vector length is a row.

# label | ISA | CROSS | qemu command with -cpu
ROWS=()
arm_rows_seen=" "
while IFS='|' read -r isa arch run_on; do
    case $arch in arm32 | aarch64) ;; *) continue ;; esac
    IFS='|' read -r cross qemu tag < <(awk -f tools/isas.awk -v want=arch -v arch="$arch" config/isas.txt)
    IFS=';' read -ra cpus <<<"$run_on"
    [[ $arm_rows_seen == *" $tag-scalar "* ]] || cpus=("scalar:${cpus[0]}" "${cpus[@]}")
    for cpu in "${cpus[@]}"; do
        i=$isa
        case $cpu in scalar:*) i=scalar cpu=${cpu#scalar:} ;; esac
        label=$tag-$i
        case $cpu in *sve-default-vector-length=*) label+=-$((${cpu##*=} * 8)) ;; esac
        [[ $arm_rows_seen == *" $label "* ]] && continue
        arm_rows_seen+="$label "
        ROWS+=("$label|$i|$cross|$qemu -L /usr/${cross%-} -cpu $cpu")
    done
done < <(awk -f tools/isas.awk -v want=rows config/isas.txt)
unset arm_rows_seen isa arch run_on cross qemu tag cpus cpu i label
