"""The hidden specs: one module per topic, each defining `TOPIC` (`jaxlings.grading.spec.Topic`),
with the samplers and hidden edge cases students never see. The grader's side only: the student
package leaves this package out (`jaxlings.course.dist`); `jaxlings.grading.topics` loads them.
"""
