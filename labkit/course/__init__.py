"""The course around the notebooks: quizzes, exercises and grading, the trace viewer, lesson times
(submodules load on demand, so ipywidgets is not imported here)."""
