"""The advisory locks that keep writers, creators and operators of a bank out of each other's way.

Three kinds of session touch a bank, and each waits only where it holds nothing
another could be waiting for, so no cycle of waits (a deadlock) can form from
our own locks (docs/write-path.md, "Concurrency"):

* writers (resolution, linking, forgetting, flushing) hold the bank lock in
  SHARE mode until they commit: any number at once;
* a writer that creates entities also holds the bank's creation lock until
  it commits: two transactions that each created a name in an earlier
  statement can otherwise wait on each other's uncommitted name forever;
* an operator correction holds the bank lock EXCLUSIVE: it waits, holding
  nothing, for the writers in flight, and works on a bank nobody writes.

Keys are (class, hashtext(bank_id)), in the two-integer key space, apart from
the bigint keys applications use.
"""

BANK = 1162018817      # 0x45520001
CREATION = 1162018818  # 0x45520002
