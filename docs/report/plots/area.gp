# Area of each format configuration relative to E2M1-only.
# Run from the report directory: gnuplot plots/area.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/area.svg'
set datafile separator ','
set grid
set key outside right top
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics ('e2m1' 0, 'e2m1+e1m2' 1, 'all' 2, 'int4' 3, 'e1m2' 4, 'e2m1 (sky130hd)' 5, 'e2m1+e1m2 (sky130hd)' 6, 'all (sky130hd)' 7, 'int4 (sky130hd)' 8, 'e1m2 (sky130hd)' 9, 'e2m1 (generic tile2x2)' 10, 'e2m1+e1m2 (generic tile2x2)' 11, 'all (generic tile2x2)' 12, 'int4 (generic tile2x2)' 13) rotate by -25
set ylabel 'area vs E2M1-only (%)'
set xrange [-0.7:13.7]
plot 'data/area.csv' skip 1 using 1:5 with boxes title 'synthesized', 3.1 with lines dt 2 lw 2 title 'MixFP4 published'

