# poprt_add_popef: compile an ONNX model to a PopEF as a build step (installed with the poprt
# package; find_package(poprt) includes it).
#
#   poprt_add_popef(TARGET name MODEL model.onnx OUTPUT model.popef
#                   [INPUT_SHAPES x=1,3,224,224 ...] [PRECISION fp32|fp16]
#                   [OPTIONS --flag value ...] [DEPENDS file ...])
#
# A custom command runs the installed poprt-convert (the imported target poprt::poprt-convert) and
# a target `name` (built by default) depends on its output. The PopEF is rebuilt when the model,
# the files in DEPENDS (external data, calibration inputs: the model's own folder is not scanned),
# the arguments or poprt-convert itself change, and only then; the commands of different models
# are independent, so `cmake --build -j` compiles them in parallel. MODEL is relative to the
# current source dir, OUTPUT to the current binary dir. poprt-convert writes into
# <binary dir>/poprt_popef/<name>/ (the converted ONNX and summary.json stay there; the target's
# POPRT_OUTPUT_DIR property names it) and the PopEF is copied to OUTPUT. With POPRT_CACHE_DIR in the
# build's environment (or --cache_dir in OPTIONS) a clean build copies unchanged models from the
# compile cache instead of compiling them.
function(poprt_add_popef)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;MODEL;OUTPUT;PRECISION" "INPUT_SHAPES;OPTIONS;DEPENDS")
  foreach(required TARGET MODEL OUTPUT)
    if(NOT arg_${required})
      message(FATAL_ERROR "poprt_add_popef: ${required} is required")
    endif()
  endforeach()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "poprt_add_popef(${arg_TARGET}): unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET poprt::poprt-convert)
    message(FATAL_ERROR "poprt_add_popef: poprt::poprt-convert is missing (find_package(poprt) first)")
  endif()

  get_filename_component(model "${arg_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(work "${CMAKE_CURRENT_BINARY_DIR}/poprt_popef/${arg_TARGET}")
  set(args --input_model "${model}" --output_dir "${work}" --export_popef --summary_json "${work}/summary.json")
  foreach(shape IN LISTS arg_INPUT_SHAPES)
    list(APPEND args --input_shape "${shape}")
  endforeach()
  if(arg_PRECISION)
    list(APPEND args --precision "${arg_PRECISION}")
  endif()
  list(APPEND args ${arg_OPTIONS})
  # Make does not rerun a command whose command line changed: the arguments live in a file the
  # command depends on, rewritten (and so newer) only when they change.
  file(CONFIGURE OUTPUT "${work}.args" CONTENT "${args}\n" @ONLY)

  add_custom_command(OUTPUT "${output}"
    COMMAND poprt::poprt-convert ${args}
    COMMAND "${CMAKE_COMMAND}" -E copy "${work}/executable.popef" "${output}"
    DEPENDS "${model}" ${arg_DEPENDS} "$<TARGET_FILE:poprt::poprt-convert>" "${work}.args"
    COMMENT "poprt-convert ${arg_MODEL} -> ${arg_OUTPUT}"
    VERBATIM)
  add_custom_target(${arg_TARGET} ALL DEPENDS "${output}")
  set_target_properties(${arg_TARGET} PROPERTIES POPRT_POPEF "${output}" POPRT_OUTPUT_DIR "${work}")
endfunction()
