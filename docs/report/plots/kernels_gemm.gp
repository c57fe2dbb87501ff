# Throughput against cuBLAS BF16 on NVIDIA H100 80GB HBM3, per GEMM shape (M × N × K).
# Run from the report directory: gnuplot plots/kernels_gemm.gp
set terminal svg size 760,400 enhanced font 'sans,11' background rgb 'white'
set output 'figures/kernels_gemm.svg'
set datafile separator ','
set grid
set key outside right top
set key noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel 'throughput vs cuBLAS BF16'
set xtics rotate by -20
set key autotitle columnhead
plot for [i=2:9] 'data/kernels_gemm.csv' using i:xtic(1)

