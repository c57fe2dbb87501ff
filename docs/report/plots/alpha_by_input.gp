# Attenuation alpha = <Q(x),x>/||x||^2 by input.
# Run from the report directory: gnuplot plots/alpha_by_input.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/alpha_by_input.svg'
set datafile separator ','
set grid
set key outside right top
set yrange [0.985:1.005]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel 'alpha'
set xtics rotate by -20
set key autotitle columnhead
plot for [i=2:7] 'data/alpha_by_input.csv' using i:xtic(1)

