# Quality against energy per MAC.
# Run from the report directory: gnuplot plots/tradeoff_energy.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/tradeoff_energy.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'energy per MAC vs E2M1-only (%)'
set ylabel 'quality loss (%)'
set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05
plot 'data/tradeoff.csv' skip 1 using ($1==0 ? $5 : NaN):6:3 with labels point pt 7 offset 0.5,0.5 left font ',9' title 'loss gap to BF16', 'data/tradeoff.csv' skip 1 using ($1==1 ? $5 : NaN):6:3 with labels point pt 6 offset 0.5,-0.5 left font ',9' title '|1 - eta_8|'

