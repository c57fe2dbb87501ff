# Lints every RTL configuration:
#   cmake -DVERILATOR=... -DRTL_DIR=... -DFORMAT_SETS=<build>/format_sets.cmake -P run_lint.cmake
# FORMAT_SETS holds golden's format sets (cmake/NibbleFormatSets.cmake writes it). Each top
# (nibble_dpu, nibble_tile, nibble_quantizer) is linted for every named format set (E2M1, E1M2,
# INT4, E2M1+E1M2, all three), the DPU for every lane design and every non-empty set of formats
# and the tile for every lane design, the DPU and tile for each scale-format set other than all
# and each scale format alone, and the tile also at 8 x 8, 16 x 8 and 4 x 4 with 32 lanes; each
# configuration once as synthesis sees it and once with assertions compiled in.
# Any warning fails.
include(${FORMAT_SETS})
set(pkgs ${RTL_DIR}/pkg/nibble_f32_pkg.sv ${RTL_DIR}/pkg/nibble_pkg.sv
         ${RTL_DIR}/pkg/nibble_quant_pkg.sv)
file(GLOB modules ${RTL_DIR}/nibble_*.sv)
set(masks ${NIBBLE_FORMAT_SET_SV})
set(configs)
foreach(mask ${masks})
  list(APPEND configs "nibble_dpu|-GFormatMask=${mask}|-GLanes=16")
  list(APPEND configs "nibble_dpu|-GFormatMask=${mask}|-GLanes=32")
  list(APPEND configs "nibble_tile|-GFormatMask=${mask}")
  list(APPEND configs "nibble_quantizer|-GFormatMask=${mask}|-GLanes=16")
  list(APPEND configs "nibble_quantizer|-GFormatMask=${mask}|-GLanes=32")
endforeach()
# Every lane design other than the default (lane_design_e values 0 .. NumLaneDesigns - 1,
# read from the package): the DPU for every mask, the tile at all formats.
file(READ ${RTL_DIR}/pkg/nibble_pkg.sv pkg_text)
string(REGEX MATCH "NumLaneDesigns +=[ ]*([0-9]+)" _ "${pkg_text}")
math(EXPR last_design "${CMAKE_MATCH_1} - 1")
foreach(design RANGE ${last_design})
  foreach(mask ${NIBBLE_FORMAT_MASKS_EVERY_SV})
    list(APPEND configs "nibble_dpu|-GFormatMask=${mask}|-GLanes=16|-GLaneDesign=${design}")
  endforeach()
  list(APPEND configs "nibble_tile|-GLaneDesign=${design}")
endforeach()
# The scale-format sets other than all of them (E4M3 + UE8M0, FP32) and each scale format alone.
set(scale_masks ${NIBBLE_SCALE_FORMAT_SET_SV} ${NIBBLE_SCALE_FORMAT_ALONE_SV})
list(REMOVE_DUPLICATES scale_masks)
list(REMOVE_ITEM scale_masks ${NIBBLE_SCALE_FORMAT_MASK_ALL_SV})
foreach(scales ${scale_masks})
  list(APPEND configs "nibble_dpu|-GScaleFormatMask=${scales}" "nibble_tile|-GScaleFormatMask=${scales}")
endforeach()
# The tile's array shape and lane count (every format): the spec's 8 x 8 and 16 x 8 arrays,
# and 32 lanes at the default 4 x 4.
list(APPEND configs "nibble_tile|-GRows=8|-GCols=8" "nibble_tile|-GRows=16|-GCols=8"
                    "nibble_tile|-GLanes=32")
# The operand register file, the 16-point RHT and the quantizer's helpers stand alone as well.
list(APPEND configs "nibble_operand_rf" "nibble_rht16" "nibble_f32_div" "nibble_e4m3_encode" "nibble_grid_round"
                    "nibble_block_scale" "nibble_elem_quant")
# The pipelined quantizer of the clock target, its block scale and divider, and the delay line.
list(APPEND configs "nibble_quantizer|-GDivStages=5" "nibble_block_scale|-GDivStages=5" "nibble_elem_quant|-GCut=1"
                    "nibble_f32_div|-GStages=3" "nibble_f32_div|-GStages=26" "nibble_pipe|-GWidth=8|-GDepth=2"
                    "nibble_pipe|-GDepth=0")
# The shared minifloat encoder: its defaults (E2M1's grid) and E4M3's (1 + 4 + 3 bits).
list(APPEND configs "nibble_minifloat_encode"
                    "nibble_minifloat_encode|-GExpBits=4|-GManBits=3|-GUnitsWidth=18")
# The binary32 primitives stand alone (the quantizer and RHT units reuse them).
list(APPEND configs "nibble_f32_round" "nibble_f32_round|-GMagWidth=64|-GExpWidth=12"
                    "nibble_f32_mul" "nibble_f32_add" "nibble_scale_decode")
set(count 0)
foreach(config ${configs})
  string(REPLACE "|" ";" args "${config}")
  list(POP_FRONT args top)
  foreach(assertions "" "+define+NIBBLE_ASSERTIONS;--assert")
    execute_process(
      COMMAND ${VERILATOR} --lint-only -Wall -I${RTL_DIR}/pkg ${RTL_DIR}/lint/nibble.vlt
              --top-module ${top} ${args} ${assertions} ${pkgs} ${modules}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT "${err}${out}" STREQUAL "")
      message(FATAL_ERROR "rtl lint FAILED: ${top} ${args} ${assertions}\n${out}${err}")
    endif()
    math(EXPR count "${count} + 1")
  endforeach()
endforeach()
message(STATUS "rtl lint: ${count} configurations clean (verilator --lint-only -Wall)")
