# Energy per MAC against E2M1-only, gaussian operands.
# Run from the report directory: gnuplot plots/energy.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/energy.svg'
set datafile separator ','
set grid
set key outside right top
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics ('e2m1 e2m1' 0, 'e2m1+e1m2 e2m1' 1, 'e2m1+e1m2 e1m2' 2, 'all e2m1' 3, 'all e1m2' 4, 'all int4' 5, 'int4 int4' 6, 'e2m1 e2m1 (sky130hd)' 7, 'e2m1+e1m2 e2m1 (sky130hd)' 8, 'e2m1+e1m2 e1m2 (sky130hd)' 9, 'all e2m1 (sky130hd)' 10, 'all e1m2 (sky130hd)' 11, 'all int4 (sky130hd)' 12, 'int4 int4 (sky130hd)' 13) rotate by -35 font ',8'
set ylabel 'energy per MAC vs E2M1-only (%)'
set xrange [-0.7:13.7]
plot 'data/energy.csv' skip 1 using 1:8 with boxes title 'simulated activity', 1.5 with lines dt 2 lw 2 title 'MixFP4 published (power)'

