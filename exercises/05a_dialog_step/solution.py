# BEGIN SOLUTION
"""Exercise 05a, one solution: the `date` step of the booking dialog."""
# STUB: """Exercise 05a: write the `date` step of the booking dialog. Fill in the TODO, then run `labkit check 05a`."""
# END SOLUTION

SCENARIO = """\
name: booking
initial: name
steps:
  name:
    instructions: Ask for the guest's name.
    results:
      name: {type: string}
    signals:
      next: {to: date, needs: [name]}
      stay: name
  date:
    # BEGIN SOLUTION
    instructions: Ask for the date of the booking. Put it into `date` as the guest said it.
    results:
      date: {type: string, description: the day of the booking}
    signals:
      next: {to: done, needs: [date], when: the guest gave a date}
      stay: {to: date, when: the date is still unknown}
      back: {to: name, when: the guest wants to change the name}
    # STUB: instructions: TODO ask for the date
    # STUB: # TODO: results (a string called date) and signals next / stay / back
    # STUB: signals:
    # STUB:   stay: date
    # END SOLUTION
  done:
    final: true
    message: Booked.
"""
