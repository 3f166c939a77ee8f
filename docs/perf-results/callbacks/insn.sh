#!/bin/sh
# insn.sh BINARY SHAPE VARIANT: callgrind instructions per call, (Ir(2N) - Ir(N)) / N, N = 100000
B=$1; N=100000
a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B count $2 $3 $N 2>&1 | sed -n 's/.*Collected : //p')
b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B count $2 $3 $((2*N)) 2>&1 | sed -n 's/.*Collected : //p')
echo "$2 $3 $(( (b - a) / N ))"
