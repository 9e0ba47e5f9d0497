 *blk.{L}.2
moe_ffn *@`:$
blk.{L}.down.weight--moe_ffnB
b
moe_ffn0`