# Relative magnitude error E[|Q| - |x|] / E|x|, RNE against SR, by input.
# Run from the report directory: gnuplot plots/mag_error.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/mag_error.svg'
set datafile separator ','
set grid
set key outside right top
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel 'relative magnitude error (%)'
set xtics rotate by -20
set key autotitle columnhead
plot for [i=2:7] 'data/mag_error.csv' using i:xtic(1)

