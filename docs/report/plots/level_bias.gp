# Per-level shrinkage bias, relative to the largest magnitude.
# Run from the report directory: gnuplot plots/level_bias.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/level_bias.svg'
set datafile separator ','
set grid
set key outside right top
set xlabel 'level / largest magnitude'
set ylabel 'bias / largest magnitude'
plot for [i=0:2] 'data/level_bias.csv' skip 1 using ($1==i ? $4 : NaN):6 with linespoints lw 2 lc i+1 pt 0 title word('e2m1 e1m2 int4', i+1).' predicted', for [i=0:2] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==0) ? $5 : NaN):8 with points pt 7 lc i+1 title word('e2m1 e1m2 int4', i+1).' measured', for [i=0:2] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==16) ? $5 : NaN):8 with points pt 6 lc i+1 title word('e2m1 e1m2 int4', i+1).' measured, RHT16'

