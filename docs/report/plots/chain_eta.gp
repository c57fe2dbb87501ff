# Compounded gain eta across depth.
# Run from the report directory: gnuplot plots/chain_eta.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/chain_eta.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'depth (layers)'
set ylabel 'eta'
set key autotitle columnhead
set xtics 1
plot for [i=2:7] 'data/chain_eta.csv' using 1:i with linespoints lw 2

