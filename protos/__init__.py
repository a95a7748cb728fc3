"""Protocol buffer schemas Profscope reads and writes, with generated code.

Field names and numbers are those of TensorFlow, XProf and TensorBoard; the
packages are Profscope's own (``profscope.tensorflow`` ...) so these modules
load next to TensorFlow or TensorBoard in one process.
"""
