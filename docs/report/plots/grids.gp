# The three 4-bit grids to scale.
# Run from the report directory: gnuplot plots/grids.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/grids.svg'
set datafile separator ','
set grid
set key outside right top
set ytics ('e2m1' 0, 'e1m2' 1, 'int4' 2)
set yrange [-0.6:2.6]
set xrange [-1.2:1.2]
set xlabel 'value / largest magnitude'
set key off
plot for [i=0:2] 'data/grids.csv' skip 1 using ($1==i ? $5 : NaN):($1-0.25):(0):(0.5) with vectors nohead lw 2 lc i+1

