# Training loss per recipe (mean over seeds).
# Run from the report directory: gnuplot plots/training_loss.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/training_loss.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'step'
set ylabel 'training loss'
set logscale y
set key autotitle columnhead
plot for [i=2:7] 'data/training_loss.csv' using 1:i with lines lw 1.5

