# SQNR by input.
# Run from the report directory: gnuplot plots/sqnr_by_input.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/sqnr_by_input.svg'
set datafile separator ','
set grid
set key outside right top
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel 'SQNR (dB)'
set xtics rotate by -20
set key autotitle columnhead
plot for [i=2:7] 'data/sqnr_by_input.csv' using i:xtic(1)

