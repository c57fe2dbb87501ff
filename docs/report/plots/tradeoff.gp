# Quality against area, one point per configuration and recipe.
# Run from the report directory: gnuplot plots/tradeoff.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/tradeoff.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'area vs E2M1-only (%)'
set ylabel 'quality loss (%)'
set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05
plot 'data/tradeoff.csv' skip 1 using ($1==0 ? $4 : NaN):6:3 with labels point pt 7 ps 1.2 offset 0.5,0.5 left font ',9' title 'loss gap to BF16 (training)', 'data/tradeoff.csv' skip 1 using ($1==1 ? $4 : NaN):6:3 with labels point pt 6 ps 1.2 offset 0.5,-0.5 left font ',9' title '|1 - eta_8| (chain)'

