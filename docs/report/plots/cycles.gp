# MAC utilization against operand bandwidth, per array shape.
# Run from the report directory: gnuplot plots/cycles.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/cycles.svg'
set datafile separator ','
set grid
set key outside right top
set logscale x 2
set xlabel 'operand bandwidth (bytes/cycle)'
set ylabel 'MAC utilization (%)'
set yrange [0:105]
plot 'data/cycles.csv' skip 1 using (($1==2 && $2==2) ? $4 : NaN):($11*100) with linespoints lw 2 title '2x2x16', 'data/cycles.csv' skip 1 using (($1==4 && $2==4) ? $4 : NaN):($11*100) with linespoints lw 2 title '4x4x16', 'data/cycles.csv' skip 1 using (($1==8 && $2==4) ? $4 : NaN):($11*100) with linespoints lw 2 title '8x4x16', 'data/cycles.csv' skip 1 using (($1==8 && $2==8) ? $4 : NaN):($11*100) with linespoints lw 2 title '8x8x16', 'data/cycles.csv' skip 1 using (($1==16 && $2==8) ? $4 : NaN):($11*100) with linespoints lw 2 title '16x8x16', 'data/cycles.csv' skip 1 using (($1==16 && $2==16) ? $4 : NaN):($11*100) with linespoints lw 2 title '16x16x16'

