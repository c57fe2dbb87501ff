# Running product of alpha across the linear layers of the trained model (Fprop).
# Run from the report directory: gnuplot plots/training_cum_alpha.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/training_cum_alpha.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'linear layer (in order of depth)'
set ylabel 'cumulative alpha'
set key autotitle columnhead
plot for [i=3:6] 'data/training_cum_alpha.csv' using 1:i with linespoints lw 2

