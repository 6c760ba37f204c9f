"""`commsched import hlo` on the forms XLA's CPU dumps lack (the GPU
pipeline's, written here as XLA's printer writes them): *-start / *-done
pairs and async-start / async-done around a reduce-scatter, a call, a
collective-permute, and the group modes channel_id and
use_global_device_ids select (replica ids, partition ids, replicas across
partitions, global ids) in the three notations of replica groups.

    hlo_forms.py CLI SCRATCH_DIR
"""
import json
import os
import subprocess
import sys

ASYNC = """HloModule jit_gpu, is_scheduled=true, num_partitions=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%wrapped_rs (p: f32[16,16]) -> f32[4,16] {
  %p = f32[16,16]{1,0} parameter(0)
  ROOT %rs = f32[4,16]{1,0} reduce-scatter(%p), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%add
}

%inner (c: f32[4,16]) -> f32[4,16] {
  %c = f32[4,16]{1,0} parameter(0)
  ROOT %e = f32[4,16]{1,0} exponential(%c)
}

ENTRY %main (a: f32[4,16], b: f32[16,16]) -> (f32[16,16], f32[4,16], f32[4,16]) {
  %a = f32[4,16]{1,0} parameter(0)
  %b = f32[16,16]{1,0} parameter(1)
  %ags = (f32[4,16]{1,0}, f32[16,16]{1,0}) all-gather-start(%a), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %ars = f32[16,16]{1,0} all-reduce-start(%b), channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %rss = ((f32[16,16]{1,0}), f32[4,16]{1,0}, s32[]) async-start(%b), calls=%wrapped_rs
  %cps = (f32[4,16]{1,0}, f32[4,16]{1,0}, u32[], u32[]) collective-permute-start(%a), channel_id=4, source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
  %busy = f32[16,16]{1,0} dot(%b, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %agd = f32[16,16]{1,0} all-gather-done(%ags)
  %ard = f32[16,16]{1,0} all-reduce-done(%ars)
  %rsd = f32[4,16]{1,0} async-done(%rss)
  %cpd = f32[4,16]{1,0} collective-permute-done(%cps)
  %sum = f32[16,16]{1,0} add(%agd, %ard)
  %called = f32[4,16]{1,0} call(%rsd), to_apply=%inner
  ROOT %out = (f32[16,16]{1,0}, f32[4,16]{1,0}, f32[4,16]{1,0}) tuple(%sum, %called, %cpd)
}
"""

# 2 replicas x 2 partitions: global id = replica * 2 + partition.
MODES = """HloModule jit_modes, replica_count=2, num_partitions=2

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[8]) -> (f32[8], f32[8], f32[16], f32[8]) {
  %a = f32[8]{0} parameter(0)
  %cross_replica = f32[8]{0} all-reduce(%a), replica_groups={}, to_apply=%add
  %replicas_and_partitions = f32[8]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1}}, to_apply=%add
  %sub_axis = f32[16]{0} all-gather(%a), channel_id=2, replica_groups=mesh['m'=4] {'m':(1)2}, dimensions={0}, use_global_device_ids=true
  %partitions = f32[8]{0} all-to-all(%a), channel_id=3, replica_groups=[1,2]<=[2]
  ROOT %t = (f32[8]{0}, f32[8]{0}, f32[16]{0}, f32[8]{0}) tuple(%cross_replica, %replicas_and_partitions, %sub_axis, %partitions)
}
"""


def load(cli, scratch, name, text):
    path = os.path.join(scratch, name + ".hlo.txt")
    with open(path, "w") as fh:
        fh.write(text)
    out = os.path.join(scratch, name + ".json")
    subprocess.run([cli, "import", "hlo", path, "-o", out], check=True)
    subprocess.run([cli, "validate", out], check=True)
    with open(out) as fh:
        return json.load(fh)


def check(cond, what):
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)


def main():
    cli, scratch = sys.argv[1:3]
    os.makedirs(scratch, exist_ok=True)

    g = load(cli, scratch, "async", ASYNC)
    order = [(n["name"], n["kind"], n.get("op")) for n in g["nodes"]]
    want = [("ags", "collective", "all_gather"),
            ("ars", "collective", "all_reduce"),
            ("rss", "collective", "reduce_scatter"),
            ("cps", "collective", "send"),
            ("busy", "compute", "dot"),
            ("agd", "wait", "wait"), ("ard", "wait", "wait"),
            ("rsd", "wait", "wait"), ("cpd", "wait", "wait"),
            ("sum", "compute", "add"), ("called/e", "compute", "exponential")]
    check(order == want, "async order %s, expected %s" % (order, want))
    by = {n["name"]: n for n in g["nodes"]}
    groups = {x["name"]: x["size"] for x in g["groups"]}
    check(groups == {"{{0,1,2,3}}": 4, "{{0,1},{2,3}}": 2,
                     "pairs{{0,1},{1,0},{2,3},{3,2}}": 4},
          "async groups %s" % groups)
    # the all-gather-start's result is its tuple's second element, the
    # async-start's too: the collective writes that, the done aliases it
    check(by["ags"]["outputs"] == [{"name": "ags", "size": 16 * 16 * 4}],
          "all-gather-start outputs %s" % by["ags"]["outputs"])
    check(by["rss"]["group"] == "{{0,1,2,3}}" and
          by["rss"]["reduce_op"] == "sum" and
          by["rss"]["outputs"] == [{"name": "rss", "size": 4 * 16 * 4}],
          "async-start reduce-scatter %s" % by["rss"])
    check(by["agd"]["inputs"] == ["ags"] and
          by["agd"]["outputs"] == [{"name": "agd", "alias_of": "ags"}],
          "all-gather-done %s" % by["agd"])
    check(by["sum"]["inputs"] == ["agd", "ard"], "sum reads the dones")
    check(by["called/e"]["inputs"] == ["rsd"], "the call reads the done")
    check(by["busy"].get("flops") == 2 * 16 * 16 * 16 and
          by["busy"].get("gemm_like") is True, "dot flops %s" % by["busy"])
    check(sorted(g["outputs"]) == ["called/e", "cpd", "sum"],
          "outputs %s" % g["outputs"])

    g = load(cli, scratch, "modes", MODES)
    by = {n["name"]: n for n in g["nodes"]}
    groups = {x["name"]: x["size"] for x in g["groups"]}
    # cross-replica: replicas {0,1} at each partition = devices {0,2},{1,3};
    # the sub-axis 'm':(1)2 of a 4-device mesh groups the same devices
    check(by["cross_replica"]["group"] == "{{0,2},{1,3}}" and
          by["sub_axis"]["group"] == "{{0,2},{1,3}}",
          "replica and sub-axis groups %s, %s"
          % (by["cross_replica"]["group"], by["sub_axis"]["group"]))
    # channel_id without global ids: replicas {0,1} across both partitions
    check(by["replicas_and_partitions"]["group"] == "{{0,1,2,3}}",
          "cross-replica-and-partition group %s"
          % by["replicas_and_partitions"]["group"])
    # an all-to-all's ids are partitions of each replica
    check(by["partitions"]["group"] == "{{0,1},{2,3}}",
          "cross-partition group %s" % by["partitions"]["group"])
    check(groups == {"{{0,2},{1,3}}": 2, "{{0,1,2,3}}": 4,
                     "{{0,1},{2,3}}": 2}, "mode groups %s" % groups)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
