 *blk.{L}.2
moe_ffn  * @:/
blk.{L}.up.weight-+-	
moe_ffn :1
blk.{L}.down.weight--+ 	
moe_ffnB
cut
moe_ffn  