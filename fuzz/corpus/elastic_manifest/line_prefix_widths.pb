 *blk.{L}.2
experts *2
width  *@`:&
blk.{L}.up.weightexpertswidth-:(
blk.{L}.down.weightexperts-widthB
w32
width  B
w64
width@@