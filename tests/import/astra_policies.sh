#!/bin/sh
# What tells ASTRA-sim's parallelism policies apart, checked on real
# workloads (data/astra-sim, from astra-sim/astra-sim) and on variants of
# them: the loop's order and blocking, the groups' layout, recomputation,
# the NPU count a header implies, ALLREDUCEALLTOALL.
#
#   astra_policies.sh CLI PYTHON3 DATA_DIR SCRATCH_DIR
set -u
cli=$1
py=$2
data=$3
s=$4
rm -rf "$s" && mkdir -p "$s" || exit 1
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
imp() { # imp OUT FILE [options]: import, validate
    out=$1
    shift
    "$cli" import astra "$@" -o "$s/$out.json" 2> "$s/$out.notes" ||
        fail "import $*: $(cat "$s/$out.notes")"
    "$cli" validate "$s/$out.json" > /dev/null || fail "$out does not validate"
}
q() { # q GRAPH PYTHON-EXPRESSION over g (the graph) and idx (name -> position)
    "$py" -c "
import json, sys
g = json.load(open('$s/$1.json'))
idx = {n['name']: i for i, n in enumerate(g['nodes'])}
node = {n['name']: n for n in g['nodes']}
print($2)"
}

# HYBRID_DLRM waits for the embeddings' gradient all-to-all at layer 0's
# weight gradient; HYBRID_DLRM_ENHANCED only before layer 0's update.
imp dlrm "$data/DLRM_HybridParallel.txt"
sed '1s/HYBRID_DLRM/HYBRID_DLRM_ENHANCED/' "$data/DLRM_HybridParallel.txt" > "$s/enh.txt"
imp enh "$s/enh.txt"
[ "$(q dlrm "idx['L0.Embedding.ig_comm.wait'] < idx['L0.Embedding.update'] and 'L0.Embedding.igrad' in node['L0.Embedding.update']['inputs']")" = True ] ||
    fail "HYBRID_DLRM: the embedding gradient is not waited in the backward pass"
[ "$(q enh "idx['L0.Embedding.ig_comm.wait'] > idx['L7.MLP_Top_2.update'] and 'L0.Embedding.igrad' in g['outputs']")" = True ] ||
    fail "HYBRID_DLRM_ENHANCED: the embedding gradient is waited before the end"
# the all-to-all of the embeddings is issued by the first top layer's input
# gradient and read by the first top layer's forward
[ "$(q dlrm "node['L0.Embedding.ig_comm']['inputs'] == ['L5.MLP_Top_0.ig'] and 'L0.Embedding.act' in node['L5.MLP_Top_0.fwd']['inputs']")" = True ] ||
    fail "HYBRID_DLRM: the embeddings' all-to-alls are not around the bottom MLP"

# HYBRID_DATA_MODEL and HYBRID_MODEL_DATA: the same file, the inner
# dimension is model parallel in one and data parallel in the other.
sed '1s/HYBRID_MODEL_DATA/HYBRID_DATA_MODEL/' "$data/MLP_HybridParallel_Model_Data.txt" > "$s/dm.txt"
imp md "$data/MLP_HybridParallel_Model_Data.txt" --npus 32
imp dm "$s/dm.txt" --npus 32
[ "$(q md "sorted((x['name'], x['size'], x['hosts']) for x in g['groups'])")" = "[('dp', 16, 2), ('mp', 2, 2)]" ] ||
    fail "HYBRID_MODEL_DATA groups: $(q md "g['groups']")"
[ "$(q dm "sorted((x['name'], x['size'], x['hosts']) for x in g['groups'])")" = "[('dp', 16, 4), ('mp', 2, 1)]" ] ||
    fail "HYBRID_DATA_MODEL groups: $(q dm "g['groups']")"

# HYBRID_TRANSFORMER blocks on input-gradient collectives, HYBRID_DATA_MODEL
# waits for them after the weight gradient.
[ "$(q dm "idx['L5.layer_64_2_mlp5.ig_comm.wait'] > idx['L5.layer_64_2_mlp5.wg']")" = True ] ||
    fail "HYBRID_DATA_MODEL: input-gradient collective waited too early"
sed '1s/HYBRID_MODEL_DATA/HYBRID_TRANSFORMER/' "$data/MLP_HybridParallel_Model_Data.txt" > "$s/tr.txt"
imp tr "$s/tr.txt"
[ "$(q tr "idx['L5.layer_64_2_mlp5.ig_comm.wait'] < idx['L5.layer_64_2_mlp5.wg']")" = True ] ||
    fail "HYBRID_TRANSFORMER: input-gradient collective not blocking"

# Recomputation: checkpoints 2 and 11, initiated at 19 and 10: layers
# 11..18 and 2..9 run forward again, and their weight gradients read the
# recomputed activations.
imp fib "$data/Transformer_HybridParallel_Fwd_In_Bckwd.txt"
[ "$(q fib "sum(1 for n in g['nodes'] if n['name'].endswith(('fwd.re19', 'fwd.re10')))")" = 16 ] ||
    fail "recomputation: $(q fib "[n['name'] for n in g['nodes'] if '.re' in n['name']]")"
[ "$(q fib "node['L12.K2.wg']['inputs'][1]")" = L11.Q2.fwd.re19 ] ||
    fail "recomputed activation not read: $(q fib "node['L12.K2.wg']['inputs']")"

# The NPU count a header implies: a 16-wide model-parallel group needs 16.
sed '1s/model_parallel_NPU_group: 4/model_parallel_NPU_group: 16/' \
    "$data/Transformer_HybridParallel_Fwd_In_Bckwd.txt" > "$s/mp16.txt"
imp mp16 "$s/mp16.txt"
grep -q "16 NPUs (mp 16, dp 1)" "$s/mp16.notes" || fail "mp 16: $(cat "$s/mp16.notes")"

# ALLREDUCEALLTOALL: an all-reduce (sum) in result and bytes.
sed '3s/ALLREDUCE/ALLREDUCEALLTOALL/' "$data/microAllReduce.txt" > "$s/arata.txt"
imp arata "$s/arata.txt"
[ "$(q arata "[(n['op'], n.get('reduce_op')) for n in g['nodes'] if n['kind'] == 'collective']")" = "[('all_reduce', 'sum')]" ] ||
    fail "ALLREDUCEALLTOALL: $(q arata "g['nodes']")"
exit 0
