#!/usr/bin/env python3
"""Functions over N lines (default 80) in non-test source: crates/*/src, leaving out
`#[cfg(test)]` blocks at the end of a file, `tests.rs`/`*_tests.rs`, tests/, benches/,
examples/. A measure for issue 36 ("no function over 80 lines outside tests"), run by hand:
`python3 scripts/long-functions.py [crates] [80]`. Counts from a function's first line to its
closing brace at the same indentation, as rustfmt writes them."""

import os
import re
import sys

root=sys.argv[1] if len(sys.argv)>1 else 'crates'
limit=int(sys.argv[2]) if len(sys.argv)>2 else 80
res=[]
for dp,dn,fn in os.walk(root):
    if '/target' in dp or '/tests' in dp.replace(root,'') or 'benches' in dp or 'examples' in dp: continue
    for f in fn:
        if not f.endswith('.rs') or f=='tests.rs' or f.endswith('_tests.rs'): continue
        p=os.path.join(dp,f)
        if '/src/' not in p: continue
        L=open(p).read().split('\n')
        # cut at #[cfg(test)]
        for i,l in enumerate(L):
            if l.startswith('#[cfg(test)]'):
                L=L[:i]; break
        i=0
        while i<len(L):
            m=re.match(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)',L[i])
            if m:
                ind=m.group(1); name=m.group(7)
                j=i
                # find opening brace line
                while j<len(L) and not L[j].rstrip().endswith('{') and not L[j].rstrip().endswith(';'): j+=1
                if j<len(L) and L[j].rstrip().endswith(';'): i=j+1; continue
                k=j+1
                while k<len(L) and not (L[k].startswith(ind+'}') and len(L[k].rstrip())==len(ind)+1): k+=1
                n=k-i+1
                if n>limit: res.append((n,p.replace(root+'/',''),i+1,name))
                i=k+1
            else: i+=1
res.sort(reverse=True)
for r in res: print(f"{r[0]:4d} {r[1]}:{r[2]} {r[3]}")
print(len(res),'functions over',limit,'lines', file=sys.stderr)
