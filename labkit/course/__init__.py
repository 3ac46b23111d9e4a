"""The course around the notebooks: quizzes, exercises and their grading, the trace viewer, lesson times.

Submodules load on demand; the quiz widgets pull in ipywidgets, so importing this package loads none of them.
"""
